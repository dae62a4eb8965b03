"""Key Takeaways: each linked to its chapter, this machine's figure beside the paper's, further reading."""
from tests.app.helpers import page


def test_key_takeaways_link_each_to_its_chapter_with_both_figures():
    from ui.content import paper
    at = page("chapters/takeaways.py", max_new=12, temp=0)
    links = [link.proto.label for link in at.get("page_link") if link.proto.label.startswith("See it live: ")]
    assert links == ["See it live: The Serial Tax", "See it live: A Round, Token by Token",
                     "See it live: Identical Outputs", "See it live: Wall-Clock Race", "See it live: The α Dial",
                     "See it live: Impact & Lineage"]  # the explainer's six, in its order
    figures = [m.value for m in at.markdown if "measured here, live" in m.value and "from the paper" in m.value]
    assert len(figures) == len(links)
    assert paper.SPEEDUP in " ".join(figures)
    assert any("arxiv.org/abs/2211.17192" in m.value for m in at.markdown)  # further reading
    assert [h.value for h in at.subheader].count("Further reading") == 1
