"""The build view made from a real build: MIME types, panes, links, escaping."""

from IPython.core.interactiveshell import InteractiveShell

import gpulab
from gpulab.compiler.bundle import bundle_of
from gpulab.display.view import MIME_TYPE, BuildView


def scaled_sum(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    doubled = a * 2.0  # "<script>alert(1)</script>"
    return doubled + b


def test_bundle_of_a_real_build():
    build = gpulab.compile("reduce", scaled_sum, target="sm_90")
    bundle = BuildView(bundle_of(build))._repr_mimebundle_()
    assert set(bundle) == {MIME_TYPE, "text/html", "text/plain"}
    data = bundle[MIME_TYPE]
    assert [p["id"] for p in data["panes"]] == ["python", "cuda", "ptx", "sass"]
    assert data["stats"]["operator_calls"] == 0
    # The return line (pane line 3) is linked to SASS lines and to a CUDA line.
    sass_keys = [keys for keys in data["links"]["sass"].values() if "py:3" in keys]
    assert sass_keys and any(k.startswith("cu:") for keys in sass_keys for k in keys)
    html = bundle["text/html"]
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "__global__" in html and "scaled_sum" in bundle["text/plain"]


def test_build_displays_itself_in_ipython():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpulab")
    build = gpulab.compile("map", scaled_sum, target="sm_80", lto=False)
    data, _ = shell.display_formatter.format(build)
    assert data[MIME_TYPE]["stats"]["operator_calls"] > 0 and "text/html" in data
