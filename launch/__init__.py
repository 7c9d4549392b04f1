"""bgl.launch: start a partition's graph servers and the trainers on a cluster (local, ssh, Slurm or
torchrun's env mode), supervise them and stop everything when one part fails.

The design (who starts what, failures, restarts, keys) is in docs/ARCHITECTURE.md, "Launch".

Module by module:

| file | role |
|---|---|
| `launch/hosts.py` | DistDGL `ip_config` hosts files (`IP [PORT]`), errors with file and line; `this_machine()`: `--backend local` without `--hosts` (one host, 127.0.0.1, every part served), as `torchrun --standalone` |
| `launch/spec.py` | `ClusterSpec`: where every server and trainer runs and on which port, validated before anything starts; the torchrun command line (`--monitor-interval=0.1`: torch 2.2's 5 s poll was most of a killed trainer's detection time); `check_training_program`: the training script (or program) exists, for the backends whose trainers run on this machine (local, env) |
| `launch/backends.py` | `local` and `ssh` backends: start, stop, kill |
| `launch/agent.py` | per-process agent: reads secrets from stdin, runs the command in its own process group, kills the tree when stdin closes |
| `launch/supervisor.py` | preflight, servers, PING, warm-up, `torch.distributed.run` trainers with `BGL_SERVERS` / `BGL_PARTITION`, the watch loop; a trainer failure or a signal tears everything down, unless `--max-restarts` allows another start of the whole trainer group (every host's torchrun stopped and started again with `BGL_RESTART_COUNT`, servers kept; the script resumes from its own checkpoint, `examples/train_sage.py` / `train_link_pred.py --checkpoint-dir` through `bgl.examples.checkpoints`) |
| `launch/server_watch.py` | `ServerWatch`: health PINGs to running graph servers; one that exits or stops answering PING is restarted at the same address with the same keys and token (`--server-restarts` per `--server-restart-window`, else the launch stops) |
| `launch/run_keys.py` | `RunKeys`: the launch's fresh CURVE key pairs and what each process is sent; the warm-up request that compiles the servers' kernels before trainers start |
| `launch/members.py` | `Member` (one supervised process) and `OutputPump`, which re-prints every line as `[host:role:rank] line` and hands a trainer's lifecycle lines to the supervisor's `Timeline` instead |
| `launch/lifecycle.py` | the trainer's side of the lifecycle channel: `lifecycle.event("start" / "first_batch" / "checkpoint_start" / "checkpoint_end" / "train_end")` and `lifecycle.loader_wait(loader)` (an epoch's trainer wait) print one marker line on stdout (only with `BGL_LIFECYCLE=1`, which the supervisor sets); stdout because the launcher already reads it on every backend, and it stamps each line on its own clock |
| `launch/ett.py` | `Timeline` (launch start, each restarted failure, the trainers' events) and `Lifecycle`: the wall time split into first batch, training, checkpointing, each failure (since the last checkpoint + restart + resume) and other, ETT % = training / wall; the parts are disjoint and add up to the wall (a crash loop's batchless starts counted once); `bgl launch` prints its `line()` last, failed or not |
| `launch/slurm_env.py` | our `SLURM_JOB_NODELIST` parser (ranges, several bracket groups, suffixes; agrees with `scontrol show hostnames`), `SlurmAllocation` (node list, `SLURM_NNODES` check, CPU/GPU counts for defaults), node addresses from `scontrol show node`'s `NodeAddr` |
| `launch/slurm_backend.py` | `slurm` backend: each process one `srun --overlap` step on its node, secrets and EOF over srun's stdin; `NodeWatch` probes every node's slurmd port once a second and names a node silent for `--slurm-node-timeout` s |
| `launch/env_world.py` | `World`: rank, node and rendezvous read from torchrun/TorchX/Kubeflow (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `GROUP_RANK`, `MASTER_ADDR`/`PORT`) or srun (`SLURM_PROCID`, ...); `RunStore`, the run's keys in torch's TCPStore |
| `launch/env_mode.py` | `env` mode: run as every trainer; `EnvSupervisor` publishes node addresses, builds the same `ClusterSpec` everywhere, starts the node's servers on local rank 0, runs the command under the agent, spreads a failure through the store |
"""
