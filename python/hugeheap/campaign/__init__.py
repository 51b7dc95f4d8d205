"""The campaign wing: many runs. A suite file is loaded and checked
(suite.py), its instances made (instances.py), the runs planned in paired
blocks (plan.py) and handed to an executor (executors.py) whose workers
measure each with the measure wing (worker.py); the coordinator commits every
finished run to the campaign's store (store.py) and judges the answers
(adapters.py, verdicts.py). `hugeheap bench`. It imports only the measure wing."""
