import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;

/**
 * A Java service holding one side of a Curator InterProcessReadWriteLock, for the interop test
 * (test/zookeeper/zookeeper-curator-rw.spec.ts).
 * Usage: java CuratorRwLockHolder <connection string> <lock path> <read|write> <acquire timeout ms>
 * Prints CONNECTED, then ACQUIRED (holds until a line arrives on stdin, releases, prints RELEASED) or TIMEOUT.
 */
public class CuratorRwLockHolder {
    public static void main(String[] args) throws Exception {
        String connection = args[0];
        String path = args[1];
        boolean read = "read".equals(args[2]);
        long timeoutMs = Long.parseLong(args[3]);
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(connection, 10_000, 10_000, new RetryOneTime(100))) {
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no connection to " + connection);
            System.out.println("CONNECTED");
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
            InterProcessMutex lock = read ? rw.readLock() : rw.writeLock();
            if (!lock.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
                System.out.println("TIMEOUT");
                return;
            }
            System.out.println("ACQUIRED " + String.join(",", lock.getParticipantNodes()));
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            lock.release();
            System.out.println("RELEASED");
        }
    }
}
