"""The cache's direct mode: a repeat of `dump`, `passes`, `lines`, `diff` (to a pipe) or `report` served
from its command line alone, without click, Triton, torch or the kernel file (as ccache's direct mode
skips the preprocessor).

The full key (compiler.cache_key) needs Triton and the loaded kernel: its code and everything it
calls, about 0.4 s before anything is found. So a full run, after click parsed its argv, leaves a
*record* keyed by that argv as typed (record.py: with the working folder, sys.path, the watched
environment, the interpreter and irscope's code): the request as data (the command, -o, the view's
options), the output as it printed to a pipe, the exit status, and everything the run depended on.
irscope.entry makes a `Recorder` from the argv and asks `serve` first; when it cannot answer, the
click CLI runs with that recorder (click's obj), and the commands hand it what they did
(recorder.py). A repeat report is its own record (report.py). No module-level state: what a run
records is on its Recorder.

    record    the key, the record file, what a run depended on and whether it still holds
    recorder  Recorder: what the commands call; what may be recorded
    serve     a repeat answered from its record, written to the stream it is given
    report    a report's record: its folders' stamps and the page
"""

from irscope.direct.recorder import Recorder
from irscope.direct.serve import serve

__all__ = ("Recorder", "serve")
