"""Streams: the caller's stream as a raw ``CUstream`` handle."""

from __future__ import annotations

_current_stream = None  # cupy.cuda.get_current_stream, looked up once


def stream_handle(stream) -> int:
    """Return the ``CUstream`` address of ``stream``.

    Parameters
    ----------
    stream : object or None
        ``None`` (CuPy's current stream), an object with the
        ``__cuda_stream__`` protocol, a CuPy stream (``.ptr``) or an int.
    """
    global _current_stream
    if stream is None:
        if _current_stream is None:
            import cupy

            _current_stream = cupy.cuda.get_current_stream
        return _current_stream().ptr
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "ptr"):
        return int(stream.ptr)
    if isinstance(stream, int):
        return stream
    raise TypeError(f"stream= takes an object with __cuda_stream__, a CuPy stream or None, not {type(stream).__name__}")
