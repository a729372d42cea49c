import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;

/**
 * A Java service holding a Curator lock, for the interop test (test/zookeeper/zookeeper-curator.spec.ts).
 * Usage: java CuratorLockHolder <connection string> <lock path> <acquire timeout ms>
 * Prints ACQUIRED (then holds until a line arrives on stdin, releases and prints RELEASED) or TIMEOUT.
 */
public class CuratorLockHolder {
    public static void main(String[] args) throws Exception {
        String connection = args[0];
        String path = args[1];
        long timeoutMs = Long.parseLong(args[2]);
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(connection, 10_000, 10_000, new RetryOneTime(100))) {
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no connection to " + connection);
            System.out.println("CONNECTED");
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
                System.out.println("TIMEOUT");
                return;
            }
            System.out.println("ACQUIRED " + String.join(",", mutex.getParticipantNodes()));
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            mutex.release();
            System.out.println("RELEASED");
        }
    }
}
