"""The live view's ES module alone, as VS Code's and Colab's widget managers load it (neither runs here).

A page with no JupyterLab imports the loader each view's model carries (``gpulab/notebook/static/loader.js``)
and renders it with a model that holds a real build's state (anywidget's front-end model: ``get``, ``on``,
``off``, ``send``, and the ``widget_manager`` that finds the shared module's model, whose state holds the
view's module and CSS).
The page's body is VS Code's (``vscode-dark`` and its ``--vscode-*`` variables) or Colab's
(``--colab-*``): the view takes the host's colours, follows a theme switch, links lines on hover,
and its build bar sends the kernel the messages :mod:`gpulab.notebook.live` answers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gpulab
from gpulab.notebook.live import STATIC, BuildWidget, view_module

pytestmark = pytest.mark.browser

HOST = "http://host.invalid"
PAGE = """<!doctype html><html><head></head>
<body class="{body_class}" style="{variables}"><div id="out"></div>
<script type="module">
import loader from "{host}/loader.js";
const state = {state};
const shared = {shared};
const listeners = {{}};
window.sent = [];
window.asked = [];
window.model = {{
  get: k => state[k],
  set: (k, v) => {{ state[k] = v; (listeners["change:" + k] || []).forEach(f => f()); }},
  on: (e, f) => (listeners[e] = listeners[e] || []).push(f),
  off: (e, f) => (listeners[e] = (listeners[e] || []).filter(g => g !== f)),
  send: m => window.sent.push(m),
  widget_manager: {{ get_model: async id => {{ window.asked.push(id); return {{ get: k => shared[k] }}; }} }},
}};
loader.render({{ model: window.model, el: document.getElementById("out") }});
</script></body></html>"""
VSCODE = ("vscode-dark", "--vscode-editor-background:#1e1e1e;--vscode-foreground:#cccccc;"
          "--vscode-editor-foreground:#d4d4d4;background:#1e1e1e")
COLAB = ("", "--colab-primary-surface-color:#fafafa;--colab-primary-text-color:#202124;background:#fafafa")


def saxpy(x: gpulab.f32, y: gpulab.f32) -> gpulab.f32:
    return 2 * x + y


@pytest.fixture(scope="module")
def state():
    widget = BuildWidget(gpulab.compile("map", saxpy, target="sm_90"))
    return {k: v for k, v in widget.get_state().items() if k in ("bundle", "controls", "busy", "error",
                                                                  "diff_title", "diff_text", "module")}


def _script(value) -> str:
    return json.dumps(value).replace("</", "<\\/")


def _page(browser, state, body_class: str, variables: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    shared = {k: v for k, v in view_module().get_state().items() if k in ("source", "style", "digest")}
    html = PAGE.format(body_class=body_class, variables=variables, host=HOST, state=_script(state),
                       shared=_script(shared))
    page.route(f"{HOST}/loader.js*", lambda route: route.fulfill(
        body=(STATIC / "loader.js").read_text(), content_type="text/javascript"))
    page.route(f"{HOST}/", lambda route: route.fulfill(body=html, content_type="text/html"))
    page.goto(f"{HOST}/")
    return page


def test_in_a_vscode_page_the_view_takes_its_colours_and_asks_the_kernel(browser, state):
    from playwright.sync_api import expect

    page = _page(browser, state, *VSCODE)
    try:
        view = page.locator(".gpulab-build")
        expect(view).to_have_attribute("data-gpulab-theme", "dark")
        assert view.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(30, 30, 30)"  # VS Code's
        assert view.evaluate("e => getComputedStyle(e).color") == "rgb(204, 204, 204)"
        line = view.locator(".gpulab-pane[data-pane='python'] .gpulab-line", has_text="return")
        line.hover()
        expect(view.locator(".gpulab-pane[data-pane='sass'] .gpulab-line.gpulab-linked").first).to_be_visible()
        view.locator("button.gpulab-option[data-field='fma']").click()
        view.locator("select.gpulab-target").select_option("sm_80")
        assert page.evaluate("() => window.sent") == [{"kind": "rebuild", "change": {"fma": False}},
                                                      {"kind": "rebuild", "change": {"target": "sm_80"}}]
        # The kernel answers with state: busy, then the new bundle (here, the same one with LTO off).
        page.evaluate("() => window.model.set('busy', true)")
        expect(view.locator(".gpulab-status")).to_have_text("building…")
        page.evaluate("""() => { const b = structuredClone(window.model.get('bundle')); b.lto = false;
                                 window.model.set('bundle', b); window.model.set('busy', false); }""")
        expect(view).to_have_attribute("data-lto", "off")
        # VS Code switches to its light theme: the view follows.
        page.evaluate("() => { document.body.className = 'vscode-light'; document.body.style.cssText = ''; }")
        expect(view).to_have_attribute("data-gpulab-theme", "light")
        assert view.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 255, 255)"
    finally:
        page.close()


def test_in_a_colab_page_the_view_takes_colabs_colours(browser, state):
    from playwright.sync_api import expect

    page = _page(browser, state, *COLAB)
    try:
        view = page.locator(".gpulab-build")
        expect(view).to_have_attribute("data-gpulab-theme", "light")
        assert view.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(250, 250, 250)"
        assert view.evaluate("e => getComputedStyle(e).color") == "rgb(32, 33, 36)"
        assert re.fullmatch(r"\d+ linked", view.locator(".gpulab-pane[data-pane='sass'] .gpulab-linked-count")
                            .text_content() or "0 linked")
    finally:
        page.close()


def test_views_on_one_page_import_the_shared_module_once(browser, state):
    """Each view's loader (anywidget loads one per view) asks for the shared model; the page imports its module
    and adds its stylesheet once; a view whose model names no module says what to do."""
    from playwright.sync_api import expect

    page = _page(browser, state, *COLAB)
    try:
        expect(page.locator(".gpulab-build")).to_have_count(1)
        page.evaluate(f"""async () => {{
            const second = document.body.appendChild(document.createElement('div'));
            const loader = await import('{HOST}/loader.js?again');  // another copy, as anywidget makes per view
            await loader.default.render({{ model: window.model, el: second }});
            const none = {{ ...window.model, get: k => (k === 'module' ? null : window.model.get(k)) }};
            const third = document.body.appendChild(document.createElement('div'));
            third.id = 'none';
            await loader.default.render({{ model: none, el: third }});
        }}""")
        expect(page.locator(".gpulab-build")).to_have_count(2)
        assert page.evaluate("() => window.asked") == [state["module"].removeprefix("IPY_MODEL_")] * 2
        assert page.evaluate("() => globalThis.__gpulabViewModules.size") == 1
        assert page.locator("style[data-gpulab-view]").count() == 1
        expect(page.locator("#none")).to_have_text("gpulab: this view's model names no shared module (saved by an "
                                                   "older gpulab?): run its cell again")
    finally:
        page.close()
