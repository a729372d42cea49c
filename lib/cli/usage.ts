export const USAGE = `Usage:
  nest-distributed-lock inspect (--redis URL | --etcd HOSTS) [--prefix NAMESPACE] [--json] KEY
  nest-distributed-lock watch   (--redis URL | --etcd HOSTS) [--prefix NAMESPACE] [--interval MS] [--json] KEY

Shows who holds a lock, since when, its fencing token and expiry, and who waits, in order.
"watch" refreshes the view every --interval ms until Ctrl-C.

Options:
  --redis URL       redis://[user:password@]host:port[/db], rediss:// for TLS
  --etcd HOSTS      comma-separated endpoints, e.g. http://10.0.0.1:2379,http://10.0.0.2:2379
                    (credentials: ETCDCTL_USER=user:password in the environment)
  --prefix NAME     the LockService keyPrefix the app uses (default "locks")
  --interval MS     refresh period of watch, at least 100 (default 1000)
  --timeout MS      deadline of each server call (default 5000)
  --json            print the inspection as JSON (fencing tokens as strings); watch: one line per refresh
  -h, --help        show this text

Exit codes: 0 ok, 1 the server failed or cannot inspect, 2 bad arguments.`;
