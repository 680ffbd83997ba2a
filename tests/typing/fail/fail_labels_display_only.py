"""Item 1: labels, prompts, titles and the badge are display text, not str, made by the SDK only.

Choosing by label, auto-selecting what is recommended, or passing display text where a value or
id is wanted: each is a type error."""

from __future__ import annotations

import html

from pi_ask_sdk import AnswerBuilder, DisplayText, FlowView, SelectOption


def choose_by_label(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    for option in deploy.options:
        if option.label == "Yes":  # type: ignore[comparison-overlap]
            AnswerBuilder(flow).select(deploy, option)  # type: ignore[unreachable]
        if "Yes" == option.label:  # type: ignore[comparison-overlap]  # noqa: SIM300
            AnswerBuilder(flow).select(deploy, option)  # type: ignore[unreachable]
    labels = [option.label for option in deploy.options]
    if "Approve" in labels:  # type: ignore[comparison-overlap]
        print("found by label")
    if flow.title == "Release":  # type: ignore[comparison-overlap]
        print("chose by title")  # type: ignore[unreachable]


def label_where_a_value_goes(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    yes = deploy.option("yes")
    AnswerBuilder(flow).select(deploy, yes.label)  # type: ignore[arg-type]
    deploy.value(yes.label)  # type: ignore[arg-type]
    SelectOption(yes.label)  # type: ignore[arg-type]
    flow.question(deploy.label)  # type: ignore[arg-type]
    AnswerBuilder(flow).select(deploy.label, yes)  # type: ignore[arg-type]


def auto_select_recommended(flow: FlowView) -> None:
    """The recommendation is a badge to show, not a flag to choose by."""
    deploy = flow.question("deploy")
    AnswerBuilder(flow).select(deploy, *deploy.recommended)  # type: ignore[attr-defined]
    for option in deploy.options:
        AnswerBuilder(flow).select(deploy, option.badge)  # type: ignore[arg-type]
        if option.badge == True:  # type: ignore[comparison-overlap]  # noqa: E712
            print("a badge is not a flag to act on")  # type: ignore[unreachable]
        if option.badge == "recommended":  # type: ignore[comparison-overlap]
            print("nor a string")  # type: ignore[unreachable]
        if option.recommended:  # type: ignore[attr-defined]
            print("there is no such flag")


def make_a_label(flow: FlowView) -> None:
    """Display text is made by the SDK only: a bridge cannot mint a label to compare with."""
    yes = flow.question("deploy").option("yes")
    if yes.label == DisplayText("Yes"):  # type: ignore[abstract]
        print("chose by a label made up here")
    if yes.label.text == "Yes":  # type: ignore[attr-defined]
        print("there is no plain-str attribute")


def display_text_is_not_a_str(flow: FlowView) -> str:
    deploy = flow.question("deploy")
    html.escape(deploy.prompt)  # type: ignore[arg-type]
    title: str = flow.title or ""  # type: ignore[assignment]
    print(title)
    return deploy.label  # type: ignore[return-value]
