"""Summarisation and STS data readers (`data/summaries.py`) on files written here in the real formats: a
MediaWiki XML dump (bz2), a CNN / Daily Mail .story file, a GLUE STS-B TSV."""

from __future__ import annotations

import bz2

import pytest

from genfeat.data.summaries import cnn_dm_story, load_stsb, split_article, wiki_articles, wikitext_to_text
from genfeat.errors import DataError

BODY = " ".join(f"Body sentence number {i} is here." for i in range(10))
ARTICLE = f"""{{{{Infobox thing|name=X}}}}
'''Widget''' is a [[small device|small thing]] used in [[engineering]].<ref>A citation.</ref> It was named in 1900.
[[File:Widget.png|thumb|A widget.]]

== History ==
{BODY}
=== Early days ===
The early widget was made of wood and glue.

== References ==
This reference sentence must not appear in the body.
[[Category:Devices]]
"""


def _dump(tmp_path, pages):
    xml = ['<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">']
    for title, ns, text in pages:
        body = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        xml.append(f"<page><title>{title}</title><ns>{ns}</ns><revision><text>{body}</text></revision></page>")
    xml.append("</mediawiki>")
    path = tmp_path / "dump.xml.bz2"
    path.write_bytes(bz2.compress("\n".join(xml).encode()))
    return path


def test_wiki_articles_lead_and_body(tmp_path):
    path = _dump(tmp_path, [("Widget", "0", ARTICLE), ("Gadget", "0", "#REDIRECT [[Widget]]"),
                            ("Talk:Widget", "1", ARTICLE), ("Stub", "0", "Too short. Really.")])
    [a] = wiki_articles(path)
    assert a.title == "Widget"
    assert a.lead == ["Widget is a small thing used in engineering.", "It was named in 1900."]
    assert a.body[:2] == ["Body sentence number 0 is here.", "Body sentence number 1 is here."]
    assert a.body[-1] == "The early widget was made of wood and glue." and len(a.body) == 11
    assert not any("reference sentence" in s for s in a.body)
    assert wiki_articles(path, min_body=12) == []


def test_wikitext_pieces():
    lead, body = split_article("Lead text.\n== A ==\nin A\n== See also ==\nskip\n=== Sub ===\nskip too\n== B ==\nin B")
    assert lead.strip() == "Lead text." and "in A" in body and "in B" in body and "skip" not in body
    assert wikitext_to_text("a [[b|c]] {{t|x}}<ref>r</ref> '''d'''").split() == ["a", "c", "d"]


def test_bad_dump_is_a_data_error(tmp_path):
    (tmp_path / "x.xml").write_text("<mediawiki><page>")
    with pytest.raises(DataError, match="MediaWiki"):
        wiki_articles(tmp_path / "x.xml")


def test_cnn_dm_story_and_stsb(tmp_path):
    story = tmp_path / "0001.story"
    story.write_text("First sentence of the article. Second one here.\n\nA new paragraph.\n\n@highlight\n\n"
                     "Summary point one\n\n@highlight\n\nSummary point two.\n")
    a = cnn_dm_story(story)
    assert a.body == ["First sentence of the article.", "Second one here.", "A new paragraph."]
    assert a.lead == ["Summary point one .", "Summary point two."] and a.title == "0001"
    (tmp_path / "bad.story").write_text("no highlights")
    with pytest.raises(DataError, match="@highlight"):
        cnn_dm_story(tmp_path / "bad.story")
    tsv = tmp_path / "dev.tsv"
    tsv.write_text("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                   '0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man "plays".\tA man plays.\t5.000\n')
    assert load_stsb(tsv) == [('A man "plays".', "A man plays.", 5.0)]
    (tmp_path / "bad.tsv").write_text("a\tb\n1\t2\n")
    with pytest.raises(DataError, match="STS-B"):
        load_stsb(tmp_path / "bad.tsv")
