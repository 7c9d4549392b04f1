"""``bgl launch``: graph servers + ``torch.distributed.run`` trainers on a cluster.

Examples::

    bgl launch --partition parts/ --num-trainers 2 -- python examples/train_sage.py --epochs 3
    bgl launch --hosts hosts.txt --partition parts/ --num-trainers 2 \\
        -- python examples/train_sage.py --epochs 3
    salloc -N2 bgl launch --backend slurm --partition parts/ -- python examples/train_sage.py
    torchrun --nnodes 2 --node_rank N --nproc_per_node 2 --master_addr HEAD --master_port 29500 \\
        -m bgl launch --backend env --partition parts/ -- python examples/train_sage.py
"""
from __future__ import annotations

import argparse
import json
import sys

from .arguments import float_above, int_at_least, tcp_port


def register(subparsers) -> None:
    """Add the ``launch`` parser (graph servers + trainers from a hosts file) to ``subparsers``."""
    parser = subparsers.add_parser(
        "launch", help="start graph servers and trainers on a hosts file's hosts, in a Slurm "
                       "allocation, or as each process of a torchrun/TorchX/Kubeflow job",
        description="Start one graph server per partition part (round-robin over the hosts), "
                    "wait until each answers PING, run the training command through "
                    "torch.distributed.run on every host with BGL_SERVERS/BGL_PARTITION set, "
                    "restart a graph server that dies (up to --server-restarts times), and stop "
                    "everything everywhere on the first trainer failure or Ctrl-C.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--hosts", default=None,
                        help="hosts file: one 'IP [PORT]' per line (DistDGL ip_config format); "
                             "the first host runs the torch.distributed rendezvous (local and ssh "
                             "backends; slurm reads the allocation, env the torch rendezvous); "
                             "--backend local without it runs on this machine alone (127.0.0.1)")
    parser.add_argument("--partition", required=True, help="partition directory (bgl partition)")
    parser.add_argument("--num-trainers", type=int_at_least(1), default=None,
                        help="trainer processes per host (default 1; under slurm one per GPU Slurm "
                             "gave the node, SLURM_GPUS_ON_NODE, else 1)")
    parser.add_argument("--num-servers-per-host", "--servers-per-node", "--num-servers-per-node",
                        dest="num_servers_per_host", type=int_at_least(1), default=None,
                        help="most graph servers (= parts) one host may run (default 1; with --backend "
                             "local and no --hosts, every part: this machine serves them all)")
    parser.add_argument("--backend", choices=["local", "ssh", "slurm", "env"], default="local",
                        help="local: every process on this machine; ssh: on each host via ssh; "
                             "slurm: one srun step per process inside this Slurm allocation; "
                             "env: run as each trainer by torchrun/TorchX/Kubeflow (RANK, "
                             "WORLD_SIZE, MASTER_ADDR, ... from the environment)")
    parser.add_argument("--port-base", type=tcp_port, default=30050,
                        help="first graph-server port on hosts whose line gives no port")
    parser.add_argument("--master-port", type=tcp_port, default=None,
                        help="torch.distributed rendezvous port on the first host "
                             "(default: first port after its server ports)")
    parser.add_argument("--server-threads", type=int_at_least(1), default=None,
                        help="worker threads per graph server (default: the server's default; "
                             "under slurm the node's CPUs, SLURM_CPUS_ON_NODE, less one per trainer)")
    parser.add_argument("--server-timeout", type=float_above(0), default=180.0,
                        help="seconds for every server to answer PING and a warm-up sample "
                             "(first use compiles the sampling kernels)")
    parser.add_argument("--server-restarts", type=int, default=3,
                        help="times a graph server that exits or stops answering PING is restarted "
                             "(same host, same address) within --server-restart-window seconds "
                             "before the launch stops; 0 = stop at the first server failure")
    parser.add_argument("--max-restarts", type=int_at_least(0), default=0,
                        help="times the trainers are restarted (all hosts' torchrun together, servers kept) "
                             "when one fails; the script sees BGL_RESTART_COUNT and resumes from its own "
                             "checkpoint (examples/train_sage.py --checkpoint-dir); 0 = stop at the first failure")
    parser.add_argument("--server-restart-window", type=float, default=600.0,
                        help="seconds over which --server-restarts is counted")
    parser.add_argument("--server-ping-interval", type=float, default=5.0,
                        help="seconds between health PINGs to each graph server")
    parser.add_argument("--server-hang-timeout", type=float, default=30.0,
                        help="seconds a graph server may leave every health PING unanswered "
                             "(PINGs queue behind its requests) before it is stopped and restarted")
    parser.add_argument("--grace", type=float_above(0, inclusive=True), default=5.0,
                        help="seconds between SIGTERM and SIGKILL when stopping")
    parser.add_argument("--workdir", default=None,
                        help="directory the commands run in on every host (default: cwd)")
    parser.add_argument("--python", default=sys.executable,
                        help="python on every host (same venv path everywhere)")
    ssh = parser.add_argument_group("ssh backend")
    ssh.add_argument("--ssh-port", type=tcp_port, default=22, help="sshd port on every host")
    ssh.add_argument("--ssh-key", default=None, help="private key file (ssh -i)")
    ssh.add_argument("--ssh-user", default=None, help="remote user (default: ssh's default)")
    ssh.add_argument("--ssh-strict-host-key-checking", default="accept-new",
                     choices=["yes", "accept-new", "no"], help="ssh StrictHostKeyChecking")
    ssh.add_argument("--ssh-connect-timeout", type=float_above(0), default=5.0,
                     help="seconds to wait for a host's ssh port")
    ssh.add_argument("--ssh-option", action="append", default=[], metavar="KEY=VALUE",
                     help="extra 'ssh -o' option (repeatable)")
    ssh.add_argument("--ssh-remote-tmp", default="/tmp", metavar="DIR",
                     help="directory on every host for each process's private run directory "
                          "(its CURVE keys, pid file, torchrun logs; removed when it exits)")
    slurm = parser.add_argument_group("slurm backend")
    slurm.add_argument("--slurm-node-timeout", type=float_above(0), default=3.0,
                       help="seconds a node's slurmd may leave the launcher's connects unanswered "
                            "before the node counts as lost and the launch stops naming it")
    parser.add_argument("--no-curve", action="store_true",
                        help="plaintext graph servers (no per-run CURVE keys): faster feature reads, "
                             "allowed only when every host is a loopback address")
    parser.add_argument("--no-local-reads", action="store_true",
                        help="trainers fetch every part over a socket, also the parts served on their "
                             "own host (by default they read those from the partition files: "
                             "BGL_LOCAL_PARTS)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the placement as JSON and exit without starting anything")
    parser.add_argument("train_command", metavar="COMMAND", nargs=argparse.REMAINDER,
                        help="-- training command, e.g. -- python train.py --epochs 3")
    parser.set_defaults(func=run)


def read_num_parts(partition_dir: str) -> int:
    """Number of parts of a partition directory (from ``partition.json``)."""
    from pathlib import Path

    from bgl.errors import LaunchError

    path = Path(partition_dir) / "partition.json"
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise LaunchError(f"{path}: missing; is {partition_dir!r} a partition directory "
                          "(written by bgl partition)?") from None
    except (OSError, ValueError) as e:
        raise LaunchError(f"{path}: cannot be read: {e}") from None
    num_parts = meta.get("num_parts") if isinstance(meta, dict) else None
    if not isinstance(num_parts, int) or num_parts < 1:
        raise LaunchError(f"{path}: num_parts must be an integer >= 1, got {num_parts!r}")
    return num_parts


def run(args: argparse.Namespace) -> int:
    """Launch the servers and trainers and supervise them; return the exit code (0 = all trainers succeeded)."""
    from bgl.launch.backends import make_backend
    from bgl.launch.hosts import parse_hosts_file, parse_port, this_machine
    from bgl.launch.spec import build_cluster_spec, check_plaintext_allowed
    from bgl.errors import LaunchError
    from bgl.launch.supervisor import LaunchAborted, Supervisor

    command = args.train_command[1:] if args.train_command[:1] == ["--"] else args.train_command
    if args.backend in ("local", "env"):  # trainers run here: a missing script is refused before any server
        from bgl.launch.spec import check_training_program

        check_training_program(command, args.workdir)
    if args.backend in ("slurm", "env") and args.hosts is not None:
        raise LaunchError(f"--hosts is not used with --backend {args.backend} (the nodes come from "
                          + ("the allocation)" if args.backend == "slurm" else "the torch rendezvous)"))
    if args.backend == "env" and args.max_restarts:
        raise LaunchError("--max-restarts is for the local, ssh and slurm backends; under --backend env give "
                          "torchrun its own --max-restarts (it restarts the workers there)")
    if args.num_servers_per_host is None:
        standalone = args.backend == "local" and args.hosts is None
        args.num_servers_per_host = read_num_parts(args.partition) if standalone else 1
    if args.backend == "env":
        from bgl.launch.env_mode import run_env_mode

        return run_env_mode(args, command, read_num_parts(args.partition))
    num_parts = read_num_parts(args.partition)
    num_trainers, server_threads = args.num_trainers, args.server_threads
    alloc = None
    if args.backend == "slurm":
        from bgl.launch.slurm_env import SlurmAllocation, allocation_hosts

        alloc = SlurmAllocation.from_environ()
        hosts = allocation_hosts(alloc, num_parts, args.num_servers_per_host)
        num_trainers = num_trainers or alloc.default_trainers()
        if server_threads is None:
            server_threads = alloc.default_server_threads(args.num_servers_per_host, num_trainers)
    elif args.hosts is None and args.backend == "local":
        hosts = this_machine()  # one machine, loopback: torchrun --standalone's default
    elif args.hosts is None:
        raise LaunchError(f"--backend {args.backend} needs --hosts (a hosts file)")
    else:
        hosts = parse_hosts_file(args.hosts)
    parse_port(str(args.ssh_port), "--ssh-port")
    spec = build_cluster_spec(
        hosts, args.partition, num_parts, command,
        num_trainers=num_trainers or 1, num_servers_per_host=args.num_servers_per_host,
        port_base=args.port_base, master_port=args.master_port, python=args.python,
        workdir=args.workdir, server_threads=server_threads, local_reads=not args.no_local_reads,
    )
    if args.no_curve:
        check_plaintext_allowed(hosts)
    if args.dry_run:
        print(json.dumps(spec.to_dict(), indent=2))
        return 0
    if args.backend == "ssh":
        backend = make_backend("ssh", grace=args.grace, ssh_port=args.ssh_port,
                               ssh_key=args.ssh_key, user=args.ssh_user,
                               strict_host_key_checking=args.ssh_strict_host_key_checking,
                               connect_timeout=args.ssh_connect_timeout,
                               extra_options=tuple(args.ssh_option), remote_tmp=args.ssh_remote_tmp)
    elif args.backend == "slurm":
        from bgl.launch.slurm_backend import SlurmBackend

        backend = SlurmBackend(job_id=alloc.job_id, grace=args.grace,
                               node_timeout=args.slurm_node_timeout)
    else:
        backend = make_backend("local", grace=args.grace)
    supervisor = Supervisor(spec, backend, server_timeout=args.server_timeout, grace=args.grace,
                            curve=not args.no_curve, server_restarts=args.server_restarts,
                            restart_window=args.server_restart_window,
                            health_interval=args.server_ping_interval,
                            hang_timeout=args.server_hang_timeout, max_restarts=args.max_restarts)
    try:
        return supervisor.run()
    except LaunchAborted as e:
        print(f"bgl launch: failed: {e}", file=sys.stderr)
        return e.exit_code
    finally:
        lifecycle = supervisor.lifecycle()
        if lifecycle is not None:  # the launch's last line: where its wall time went (ETT)
            print(f"bgl launch: {lifecycle.line()}", file=sys.stderr, flush=True)
