"""The strict reader of users' text files (issue 38): labelled files (text,label), item files (id,text[,metadata])
and texts one per line, used by read_labelled / lwx-edge fit, lwx-edge index add and embed/predict/search.
Every malformed file is one InputError naming the file and the 1-based line; every file in examples/ parses.
"""
import subprocess
import sys
from pathlib import Path

import pytest

from lwx_edge.errors import InputError
from lwx_edge.textfiles import read_items, read_labelled, read_lines

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
INTENTS = {"weather", "alarm", "music", "shopping"}


def test_every_file_in_examples_parses_strictly():
    files = sorted(p for p in EXAMPLES.iterdir() if p.is_file())
    assert {p.name for p in EXAMPLES.iterdir() if p.is_dir()} == {"corpus"}  # the smoke recipe's sample corpus
    assert {p.suffix for p in files} == {".csv", ".txt"}, files  # a new kind of file: teach this test to read it
    for path in files:
        if path.suffix == ".csv":
            data = read_labelled(path)
            assert set(data.labels) == INTENTS, path
            n = len(data)
            assert n == (40 if path.name == "intents.en.csv" else 12), path
            assert sorted(data.labels.count(label) for label in INTENTS) == [n // 4] * 4, path
        else:
            items = read_items(path)
            assert items.ids == items.lines and len(items) == len(read_lines(path)) > 0, path
    # the row that once read as the label 'Tomaten zu kaufen.' (an unquoted comma)
    de = read_labelled(EXAMPLES / "intents.de.csv")
    assert (de.texts[-1], de.labels[-1], de.lines[-1]) == ("Vergiss nicht, Tomaten zu kaufen.", "shopping", 13)


def test_the_sample_corpus_is_whole_and_as_summarised():
    """examples/corpus (tools/make_sample_corpus.py): two non-empty tab-separated fields on every line of its pair
    files, one non-empty sentence per line of its monolingual files, the counts its summary gives."""
    import json

    root = EXAMPLES / "corpus"
    summary = json.loads((root / "summary.json").read_text(encoding="utf-8"))
    assert summary["licence"] == "GPL-2.0-or-later" and (root / "README.md").is_file()
    for split in ("train", "dev"):
        for pair, n in summary[split].items():
            lines = (root / f"{split}.{pair}.tsv").read_text(encoding="utf-8").splitlines()
            assert len(lines) == n > 0
            assert all(len(f := line.split("\t")) == 2 and all(x.strip() for x in f) for line in lines), pair
    for lang, n in summary["mono"].items():
        lines = (root / "mono" / f"train.{lang}.txt").read_text(encoding="utf-8").splitlines()
        assert len(lines) == n > 0 and all(line.strip() and "\t" not in line for line in lines), lang
    assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) < 3 * 2**20  # a few MB at most


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


@pytest.mark.parametrize("name, content, line, message", [
    ("a.csv", "text,label\nfine,a\nVergiss nicht, Tomaten zu kaufen.,b\n", 3,
     r"3 fields, but the header has 2 \(text, label\); a comma inside a text must be quoted"),
    ("a.csv", "text,label\nfine,a\nno label here\n", 3, "1 fields, but the header has 2.*a field is missing"),
    ("a.csv", "text,label\nfine,a\n\n\"never closed,b\nmore,c\n", 4, "a quoted field never closes"),
    ("a.csv", 'text,label\n"quoted" then more,a\n', 2, "malformed CSV"),
    ("a.csv", "text,label\nfine,a\nno label,\n", 3, "empty label"),
    ("a.csv", "text,label\nfine,a\n   ,b\n", 3, "empty text"),
    (
        "a.csv", b"text,label\nfine,a\ncaf\xe9,b\n", 3,
        r"not valid UTF-8 \(byte 0xe9, byte 4 of the line\)"),
    ("a.csv", b"\xff\xfet\x00e\x00", 1, "UTF-16"),
    ("a.csv", "text,label,text\nx,y,z\n", 1, "names column 'text' twice"),
    ("a.csv", "text,label,\nx,y,\n", 1, "column 3 of the header row has no name"),
    ("a.csv", "txt,label\nx,y\n", 1, "no column 'text' \\(columns: txt, label\\); choose the columns with --text-col"),
    ("a.tsv", "text\tlabel\nfine\ta\ttab\n", 2, "3 fields, but the header has 2.*a tab inside a text"),
    ("a.jsonl", '{"text": "x", "label": "a"}\n\n{"text": "y", "label": }\n', 3, "not valid JSON"),
    ("a.jsonl", '["x", "a"]\n', 1, "expected a JSON object, got a list"),
    ("a.jsonl", '{"text": "x", "label": "a", "label": "b"}\n', 1, "key 'label' appears twice"),
    ("a.jsonl", '{"text": "x", "label": NaN}\n', 1, "NaN is not JSON"),
    ("a.jsonl", '{"text": "x"}\n', 1, "no key 'label' \\(keys: text\\)"),
    ("a.jsonl", '{"text": 3, "label": "a"}\n', 1, "the text \\('text'\\) must be a string, got a number"),
    ("a.jsonl", '{"text": "x", "label": true}\n', 1, "must be a string or an integer, got a boolean"),
    ("a.jsonl", '{"text": "x", "label": null}\n', 1, "empty label \\(null\\)"),
])
def test_a_malformed_labelled_file_is_one_error_naming_file_and_line(tmp_path, name, content, line, message):
    path = write(tmp_path, name, content)
    with pytest.raises(InputError, match=f"^{path} line {line}: .*{message}") as e:
        read_labelled(path)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("content, message", [
    ("", "empty file \\(expected a header row naming the columns: text, label\\)"),
    ("\n  \n", "empty file"),
    ("text,label\n\n", "no labelled rows"),
])
def test_files_with_nothing_to_read(tmp_path, content, message):
    path = write(tmp_path, "a.csv", content)
    with pytest.raises(InputError, match=f"^{path}: {message}"):
        read_labelled(path)
    with pytest.raises(InputError, match=f"^{tmp_path / 'none.csv'}: no such labelled file"):
        read_labelled(tmp_path / "none.csv")


def test_what_a_labelled_file_may_hold(tmp_path):
    csv_path = write(tmp_path, "a.csv", '\ufefftext , label,lang\r\n"a, b and ""c""",x,en\r\n\r\n'
                                        '"two\nlines",y,fr\r\n  spaced  ,  z  ,de\r\nab"c,x,it')
    data = read_labelled(csv_path)
    assert data.texts == ['a, b and "c"', "two\nlines", "spaced", 'ab"c'] and data.labels == ["x", "y", "z", "x"]
    assert data.lines == [2, 4, 6, 7]  # a quoted line break: the line the row starts on
    texts, labels = data
    assert texts == data.texts
    tsv = write(tmp_path, "a.tsv", "label\ttext\nx\ta, comma\n")
    assert read_labelled(tsv).texts == ["a, comma"]
    jsonl = write(tmp_path, "a.jsonl", '{"text": "one", "label": 3, "source": [1]}\n\n{"label": "b", "text": "two"}\n')
    data = read_labelled(jsonl)
    assert data.texts == ["one", "two"] and data.labels == ["3", "b"] and data.lines == [1, 3]
    assert read_labelled(write(tmp_path, "b.csv", "body,intent\nx,y\n"), "body", "intent").labels == ["y"]


def test_item_files(tmp_path):
    txt = write(tmp_path, "notes.txt", "first\n\n  second  \r\nthird")
    assert list(read_items(txt)) == [[1, 3, 4], ["first", "second", "third"], [None, None, None]]
    csv_path = write(tmp_path, "items.csv", "id,text,lang\nn1,\"Hello, world\",en\nn2,Bonjour,fr\n")
    assert list(read_items(csv_path)) == [["n1", "n2"], ["Hello, world", "Bonjour"], [{"lang": "en"}, {"lang": "fr"}]]
    jsonl = write(tmp_path, "items.jsonl", '{"id": 7, "text": "x", "tags": ["a"]}\n{"id": "b", "text": "y"}\n')
    assert list(read_items(jsonl)) == [[7, "b"], ["x", "y"], [{"tags": ["a"]}, None]]
    assert read_items(write(tmp_path, "k.csv", "key,body\nk,v\n"), "key", "body").ids == ["k"]


@pytest.mark.parametrize("name, content, line, message", [
    ("i.csv", "id,text\nn1,a\nn1,b\n", 3, "id 'n1' again \\(first on line 2\\)"),
    ("i.csv", "id,text\n,a\n", 2, "empty id"),
    ("i.csv", "id,text\nn1,\n", 2, "empty text"),
    ("i.csv", "id,text,lang\nn1,Hello, world,en\n", 2, "4 fields, but the header has 3"),
    ("i.csv", "id,txt\nn1,a\n", 1, "no column 'text'.*--id-col / --text-col"),
    ("i.jsonl", '{"id": 1.5, "text": "a"}\n', 1, "the id \\('id'\\) must be a string or an integer, got a number"),
    ("i.jsonl", '{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n', 2, "id 1 again"),
    ("i.txt", b"ok\n\xc3(\n", 2, "not valid UTF-8"),
])
def test_a_malformed_item_file_is_one_error_naming_file_and_line(tmp_path, name, content, line, message):
    path = write(tmp_path, name, content)
    with pytest.raises(InputError, match=f"^{path} line {line}: .*{message}"):
        read_items(path)


def test_the_three_call_sites_read_with_it(tmp_path):
    """read_labelled (lwx_edge.heads, lwx-edge fit), lwx-edge index add and the one-text-per-line inputs."""
    import lwx_edge.heads
    import lwx_edge.textfiles
    from lwx_edge.cli._texts import read_located
    from lwx_edge.cli.index import read_items as cli_read_items

    assert lwx_edge.heads.read_labelled is lwx_edge.textfiles.read_labelled
    bad = write(tmp_path, "items.csv", "id,text\nn1,a,b\n")
    with pytest.raises(InputError, match=f"^{bad} line 2: 3 fields"):
        cli_read_items(bad, "id", "text")
    lines = write(tmp_path, "in.txt", "one\r\rtwo\rthree")
    assert read_located(lines) == [(f"{lines} line 1", "one"), (f"{lines} line 3", "two"),
                                   (f"{lines} line 4", "three")]
    with pytest.raises(InputError, match=f"^{lines} line 2: not valid UTF-8"):
        lines.write_bytes(b"one\r\xff")
        read_located(lines)


@pytest.mark.slow
def test_the_commands_stop_on_a_malformed_file_before_loading_a_model(tmp_path):
    labelled = write(tmp_path, "train.csv", "text,label\nWill it rain?,weather\nBuy milk, eggs,shopping\n")
    items = write(tmp_path, "notes.jsonl", '{"id": "a", "text": "x"}\n{"id": "b"}\n')

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "lwx_edge", *map(str, args)], capture_output=True, text=True,
                              timeout=120)

    r = cli("fit", tmp_path / "no-bundle", labelled, "-o", tmp_path / "h")
    assert r.returncode == 2 and r.stderr.startswith(f"error: {labelled} line 3: 3 fields"), r.stderr[-2000:]
    r = cli("index", "add", tmp_path / "ix.lwx", "--input", items, "--model", tmp_path / "no-bundle")
    assert r.returncode == 2 and f"error: {items} line 2: no key 'text'" in r.stderr, r.stderr[-2000:]
    assert not (tmp_path / "h").exists() and not (tmp_path / "ix.lwx").exists()
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
