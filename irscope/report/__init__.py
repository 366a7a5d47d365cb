"""The HTML report's data: a dump folder (or a diff, or a sweep) gathered into one JSON-able model.

    model.py     dump folders -> the report model (stages, source map links, passes and their diffs,
                 resources, instruction mix, hot lines)
    measured.py  a dump's profile.json (irscope profile) -> the gutter's measured heat, hot lines, cards
    layouts.py   TTGIR layouts -> who holds which element (from Triton's own linear layouts)
    convert.py   the child process that asks Triton for those linear layouts
    pages.py     DiffResult and sweep configs -> the diff and sweep pages' models

views/report.py renders these models as one self-contained HTML file; nothing here renders.
"""
