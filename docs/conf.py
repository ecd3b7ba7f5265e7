"""Sphinx configuration of the kafkaspec documentation site (`kafkaspec docs --out DIR`).

`kafkaspec.docs` copies this folder beside the pages it generates from the spec and runs
Sphinx on both. Standard extensions only (`sphinx.ext.graphviz` for the state diagrams, as
SVG); the default theme; nothing is loaded from the network (no MathJax, no web fonts), and
Sphinx's own search runs offline.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes

project = "kafkaspec"
author = "the kafkaspec authors"
copyright = "the kafkaspec authors, Apache-2.0"  # the name Sphinx reads

extensions = ["sphinx.ext.graphviz"]
graphviz_output_format = "svg"

root_doc = "index"
exclude_patterns = ["_build"]
default_role = "literal"  # the spec's docstrings write `name` for code
smartquotes = False  # keep `--set` and quotes as the code writes them
highlight_language = "python"
pygments_style = "friendly"

html_theme = "alabaster"
html_title = "kafkaspec: Kafka's protocols, specified and model-checked"
html_static_path = ["_static"]
html_css_files = ["kafkaspec.css"]
html_theme_options = {
    "description": "An executable, model-checked reference of Kafka's replication and coordination protocols",
    "page_width": "1240px",
    "sidebar_width": "260px",
    "fixed_sidebar": True,
    "show_relbars": True,
}
html_sidebars = {"**": ["about.html", "searchfield.html", "navigation.html", "relations.html"]}
html_show_sourcelink = False
html_copy_source = False
# Search results without page summaries: a summary is fetched from the page, which browsers refuse
# for pages opened from disk (file://), and the site must work offline from its folder.
html_show_search_summary = False

# Public sources the spec cites, linked wherever they appear in running text.
_KIP_INDEX = "https://cwiki.apache.org/confluence/display/KAFKA/Kafka+Improvement+Proposals"
_JIRA = "https://issues.apache.org/jira/browse/"
_CITATION = re.compile(r"\b(KIP-\d+|KAFKA-\d+)\b")
_SKIP = (nodes.literal, nodes.literal_block, nodes.reference, nodes.raw, nodes.title, nodes.FixedTextElement)


def _link_citations(_app: Any, doctree: nodes.document) -> None:
    """KIP-N links to the list of Kafka Improvement Proposals, KAFKA-N to Apache's JIRA."""
    for text in list(doctree.findall(nodes.Text)):
        parent = text.parent
        if parent is None or any(isinstance(node, _SKIP) for node in _ancestors(text)):
            continue
        pieces = _CITATION.split(text.astext())
        if len(pieces) == 1:
            continue
        replacement: list[nodes.Node] = []
        for index, piece in enumerate(pieces):
            if index % 2 == 0:
                if piece:
                    replacement.append(nodes.Text(piece))
            else:
                uri = _JIRA + piece if piece.startswith("KAFKA-") else _KIP_INDEX
                title = (
                    "Apache JIRA"
                    if piece.startswith("KAFKA-")
                    else "in the list of Kafka Improvement Proposals"
                )
                replacement.append(nodes.reference(piece, piece, refuri=uri, reftitle=f"{piece}: {title}"))
        parent.replace(text, replacement)


def _ancestors(node: nodes.Node) -> list[nodes.Node]:
    found = []
    current = node.parent
    while current is not None:
        found.append(current)
        current = current.parent
    return found


def setup(app: Any) -> dict[str, Any]:
    app.connect("doctree-read", _link_citations)
    return {"parallel_read_safe": True}
