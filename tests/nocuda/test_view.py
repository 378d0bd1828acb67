"""The build view made from a real build: MIME types, panes, links, escaping."""

import gpulab
from gpulab.display.view import MIME_TYPE, BuildView


def scaled_sum(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    doubled = a * 2.0  # "<script>alert(1)</script>"
    return doubled + b


def test_bundle_of_a_real_build():
    build = gpulab.compile("reduce", scaled_sum, target="sm_90")
    bundle = BuildView(build)._repr_mimebundle_()
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


def test_build_displays_itself():
    build = gpulab.compile("map", scaled_sum, target="sm_80", lto=False)
    assert MIME_TYPE in build._repr_mimebundle_()
    assert build._repr_mimebundle_()[MIME_TYPE]["stats"]["operator_calls"] > 0
