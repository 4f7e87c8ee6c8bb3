"""Chapter 5's live panel in a real browser: the tools checklist comes from the server, what it picks is what
the prompt declares, and the page remembers the pick. The real demo server on the tiny Gemma 4 checkpoint."""

from __future__ import annotations

import pytest

from tests.conftest import TINY, chapter_url, demo_server


@pytest.fixture(scope="module")
def served(site):
    with demo_server(site, wait_s=120, model=str(TINY["gemma4"]), device="cpu") as server:
        yield server.url


def live_panel(page, url: str):
    page.goto(url)
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-run").wait_for(timeout=20000)  # live: the server answered
    panel.locator(".al-form-settings > summary").click()  # the settings are folded to one line
    return panel


def run_once(panel) -> str:
    """Run the form as it stands (one step of two tokens) and return the first context's prompt text."""
    panel.locator("input[name=max_steps]").fill("1")
    panel.locator("input[name=max_new_tokens]").fill("2")
    panel.locator("textarea").fill("What is in data.csv?")
    panel.locator("button.al-run").click()
    panel.get_by_text("Run ended").wait_for(timeout=60000)
    context = panel.locator(".al-context").first
    context.locator("summary").click()  # the prompt is put in the page when the reader opens it
    return context.locator("pre.al-prompt").text_content()


def checked_tools(panel) -> dict[str, bool]:
    # The checklist in view: the book's tools (pi's own, a second list, shows only for pi with its tools).
    boxes = panel.locator(".al-tools:visible input[type=checkbox]")
    return {
        boxes.nth(i).get_attribute("value"): boxes.nth(i).is_checked() for i in range(boxes.count())
    }


def test_the_checklist_decides_the_tools_in_the_prompt_and_is_remembered(served, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel = live_panel(page, chapter_url(served, "05"))
    # The server's registry, with the default pick checked.
    assert checked_tools(panel) == {"run_python": True, "list_files": False, "read_file": False}

    panel.locator(".al-tools input[value=read_file]").check()
    prompt = run_once(panel)
    assert "declaration:run_python" in prompt and "declaration:read_file" in prompt
    assert "declaration:list_files" not in prompt

    # The page remembers the pick (and the other settings) when it is opened again.
    panel = live_panel(page, chapter_url(served, "05"))
    assert checked_tools(panel) == {"run_python": True, "list_files": False, "read_file": True}
    assert panel.locator("input[name=max_new_tokens]").input_value() == "2"

    panel.locator(".al-tools input[value=run_python]").uncheck()
    prompt = run_once(panel)
    assert "declaration:read_file" in prompt and "declaration:run_python" not in prompt

    # Another chapter keeps its own settings: it starts from the server's defaults.
    panel = live_panel(page, chapter_url(served, "01"))
    assert checked_tools(panel) == {"run_python": True, "list_files": False, "read_file": False}
    page.close()
