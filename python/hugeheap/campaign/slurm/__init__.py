"""The Slurm executor: a campaign's blocks run as tasks of job arrays on a
cluster. executor.py submits, watches and merges; files.py is what it shares
with the tasks; task.py is a task on its node; commands.py calls Slurm's
client commands; doctor.py is `hugeheap doctor --slurm`."""
