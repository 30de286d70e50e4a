"""MkDocs hooks: the command-line reference generated from fmu-mb's argument parser, so that
it cannot go stale (a page holding the marker <!-- cli-reference --> gets it)."""
import argparse

MARKER = "<!-- cli-reference -->"


def _options(parser):
    rows = []
    for a in parser._actions:
        if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        names = ", ".join(f"`{s}`" for s in a.option_strings) or f"`{a.dest}`"
        choices = f" (one of {', '.join(map(str, a.choices))})" if a.choices else ""
        default = (f" Default: `{a.default}`." if a.option_strings and a.default not in
                   (None, False, argparse.SUPPRESS, []) else "")
        text = (a.help or "").replace("|", "\\|").replace("\n", " ")
        rows.append(f"| {names} | {text}{choices}{default} |")
    return rows


def cli_reference():
    """Markdown: every sub-command of fmu-mb with its usage and options."""
    from fmu_mb.tools.cli import _parser

    parser = _parser()
    out = [parser.description or "", ""]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    for name, p in sub.choices.items():
        usage = p.format_usage().replace("usage: ", "").strip()
        out += [f"## fmu-mb {name}", "", helps.get(name) or "", "", "```text", usage, "```",
                "", "| option | meaning |", "|---|---|", *_options(p), ""]
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files):
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, cli_reference())
    return markdown
