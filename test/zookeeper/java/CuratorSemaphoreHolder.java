import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryOneTime;

/**
 * A Java service holding one lease of a Curator semaphore, for the interop test
 * (test/zookeeper/zookeeper-curator-semaphore.spec.ts).
 * Usage: java CuratorSemaphoreHolder <connection string> <semaphore path> <max leases> <acquire timeout ms>
 * Prints CONNECTED, then ACQUIRED <lease node name> (then holds until a line arrives on stdin, returns the
 * lease and prints RELEASED) or TIMEOUT.
 */
public class CuratorSemaphoreHolder {
    public static void main(String[] args) throws Exception {
        String connection = args[0];
        String path = args[1];
        int maxLeases = Integer.parseInt(args[2]);
        long timeoutMs = Long.parseLong(args[3]);
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(connection, 10_000, 10_000, new RetryOneTime(100))) {
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no connection to " + connection);
            System.out.println("CONNECTED");
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, maxLeases);
            Lease lease = semaphore.acquire(timeoutMs, TimeUnit.MILLISECONDS);
            if (lease == null) {
                System.out.println("TIMEOUT");
                return;
            }
            System.out.println("ACQUIRED " + lease.getNodeName());
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            semaphore.returnLease(lease);
            System.out.println("RELEASED");
        }
    }
}
