"""``copy_run``: a run of one array copied into another, for the kernels.

``dst[at : at + n] = src[frm : frm + n]`` in a kernel compiles Numba's shape check with its
formatted error message (``cannot assign slice of shape ... from input of shape ...``): about
3 s of compile for the first kernel of a process that meets it, and more in every kernel that
links it, which re-optimises that code with its own. The loop has no such check (our kernels
never validate: docs/benchmarks.md, "The test suite's time").
"""
from numba import njit


@njit(cache=True)
def copy_run(dst, at, src, frm, n):
    """dst[at : at + n] = src[frm : frm + n], element by element."""
    for k in range(n):
        dst[at + k] = src[frm + k]
