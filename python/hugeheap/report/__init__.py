"""The report wing: reading a campaign's store. analysis.py turns runs into
figures (with stats.py), view.py prints them, html_page.py and export.py
write the page, CSV and BenchExec XML. `hugeheap report`. It imports the
campaign wing (the store and the verdicts) and nothing above it."""
