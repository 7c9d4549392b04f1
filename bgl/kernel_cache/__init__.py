"""numba's kernel cache, shared by the processes of one install: each kernel compiled by one process
while the others wait and load it (:mod:`.lock`, installed through numba's ``numba_extensions`` entry
point), what each process compiled, loaded or waited for (:mod:`.log`, ``$BGL_COMPILE_LOG``), and numba's
once-per-process set-up paid where its cost belongs (:mod:`.numba_setup`)."""
