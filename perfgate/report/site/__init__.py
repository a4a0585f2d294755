"""The static dashboard (`perfgate report --html DIR`): the history as a site that works from file:// and
GitHub Pages, with no server and nothing fetched from elsewhere.

history_data.py and kernels_data.py read the store into records, verdicts.py is the one place where verdicts
come from, case_data.py / regressions.py / compare.py / ab_pages.py shape each view, pages.py renders HTML
(escaped) with the data embedded as JSON, marks.py draws verdict marks without an emoji font, project.py
names the project and its repository (commit links), build.py writes the pages, incremental.py decides
which (only what changed since the last build), write.py moves the site into place whole, and assets/
holds the page scripts, the style sheet and the vendored uPlot (MIT).
"""
