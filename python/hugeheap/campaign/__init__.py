"""The campaign wing: many runs. A suite file is loaded and checked
(suite_file.py, into suite.py's Suite), its instances made (instances.py),
the runs planned in paired blocks (plan.py) and handed to an executor
(executors.py, or slurm/ for a cluster) whose workers measure each with the
measure wing (worker.py); the coordinator commits every finished run to the
campaign's store (store.py) in the campaign's folder (folder.py), and the
answers are read, checked and judged (answers/). `hugeheap bench`. It
imports only the measure wing."""
