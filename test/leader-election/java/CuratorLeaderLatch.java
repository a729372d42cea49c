import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.retry.RetryOneTime;

/**
 * A Java service in a Curator LeaderLatch election, for test/leader-election/zookeeper.election.spec.ts.
 * Usage: java CuratorLeaderLatch <connection string> <latch path> <participant id>
 * Prints STARTED, then LEADER once it leads. Commands on stdin, one per line:
 *   leader -> prints "SEES <leader id>" (LeaderLatch.getLeader(), "-" when none);
 *   close  -> closes the latch (gives leadership up), prints CLOSED and exits.
 */
public class CuratorLeaderLatch {
    public static void main(String[] args) throws Exception {
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10_000, 10_000, new RetryOneTime(100))) {
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no connection to " + args[0]);
            LeaderLatch latch = new LeaderLatch(client, args[1], args[2]);
            latch.start();
            System.out.println("STARTED");
            Thread waiter = new Thread(() -> {
                try {
                    latch.await();
                    System.out.println("LEADER");
                } catch (Exception interrupted) {
                    // closed before it led
                }
            });
            waiter.setDaemon(true);
            waiter.start();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            for (String line; (line = in.readLine()) != null; ) {
                if (line.equals("leader")) {
                    String id = latch.getLeader().getId();
                    System.out.println("SEES " + (id.isEmpty() ? "-" : id));
                } else if (line.equals("close")) {
                    latch.close();
                    System.out.println("CLOSED");
                    return;
                }
            }
        }
    }
}
