"""Kill a write at each named step (``tests/faults.py``, ``LWX_EDGE_FAULT``): the previous state still loads,
training resumes from the last complete checkpoint, and the next write removes what the killed one left."""
import json
import os
import shutil
import textwrap

import numpy as np
import pytest

from faults import DIR_STEPS, FILE_STEPS, NEW_AFTER, assert_killed, hidden, run_cli, run_python
from lwx_edge.atomic import atomic_dir, recover_dir, write_text_atomic
from lwx_edge.bundle import Bundle

# ------------------------------------------------------------------------------------------ the writers

@pytest.mark.parametrize("step", FILE_STEPS)
def test_a_file_write_killed_at_each_step_leaves_the_old_or_the_new_file(tmp_path, step):
    target = tmp_path / "notes.txt"
    target.write_text("old")
    r = run_python(f"from lwx_edge.atomic import write_text_atomic; write_text_atomic({str(target)!r}, 'new')",
                   fault=f"{step}@notes.txt")
    assert_killed(r)
    assert target.read_text() == ("new" if step in NEW_AFTER else "old")
    write_text_atomic(target, "third")  # the next write removes the dead writer's temporary
    assert target.read_text() == "third" and hidden(tmp_path) == []


def old_dir_and_writer(tmp_path):
    """``tmp_path/d`` holding ``a.txt`` = "old", and a script whose ``atomic_dir`` writes "new" into it."""
    target = tmp_path / "d"
    with atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("old")
    code = f"""
        from lwx_edge.atomic import atomic_dir
        with atomic_dir({str(target)!r}) as tmp:
            (tmp / "a.txt").write_text("new")
    """
    return target, textwrap.dedent(code)


@pytest.mark.parametrize("step", DIR_STEPS)
def test_a_directory_write_killed_at_each_step_leaves_the_old_or_the_new_one(tmp_path, step):
    target, code = old_dir_and_writer(tmp_path)
    assert_killed(run_python(code, fault=f"{step}@d"))
    assert target.exists() == (step != "dir:old-moved")  # killed between the renames: no d/ ...
    recover_dir(target)  # ... until a reader (or the next writer) puts the old one back
    assert (target / "a.txt").read_text() == ("new" if step in NEW_AFTER else "old")
    with atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("third")
    assert (target / "a.txt").read_text() == "third" and hidden(tmp_path) == []


def test_the_fault_hook_counts_and_names_its_target(tmp_path):
    """``#N`` fires the N-th time; another file's write of the same step does not count."""
    code = f"""
        from lwx_edge.atomic import write_text_atomic
        for i in range(3):
            write_text_atomic({str(tmp_path / 'other.txt')!r}, str(i))
            write_text_atomic({str(tmp_path / 'x.txt')!r}, str(i))
    """
    assert_killed(run_python(textwrap.dedent(code), fault="file:synced@x.txt#2"))
    assert (tmp_path / "x.txt").read_text() == "0" and (tmp_path / "other.txt").read_text() == "1"
    r = run_python(textwrap.dedent(code), fault="file:synced@nothing.txt")
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_directory_named_by_a_symlink_is_replaced_behind_the_link(tmp_path):
    """``-o LINK`` (fit, export): the link stays a link, its target gets the new content, nothing is left."""
    real = tmp_path / "real"
    with atomic_dir(real) as tmp:
        (tmp / "a.txt").write_text("old")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    with atomic_dir(link) as tmp:
        (tmp / "a.txt").write_text("new")
    assert link.is_symlink() and (real / "a.txt").read_text() == "new" and (link / "a.txt").read_text() == "new"
    assert hidden(tmp_path) == []


def test_a_dangling_link_creates_no_folders(tmp_path):
    """``-o LINK`` to a path whose folder is missing: refused, where the link's folders used to be created."""
    from lwx_edge.atomic import atomic_file
    from lwx_edge.errors import InputError

    link = tmp_path / "v.npy"
    link.symlink_to(tmp_path / "gone" / "x.npy")
    with pytest.raises(InputError, match="v.npy: a link to .*gone/x.npy, whose directory does not exist"):
        with atomic_file(link) as tmp:
            tmp.write_bytes(b"x")
    assert not (tmp_path / "gone").exists() and link.is_symlink()


def test_a_directory_never_replaces_a_file(tmp_path):
    """A file where the directory should go is refused whole: it stays, and no temporary or old copy is left."""
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt is a file, not a directory; refusing to replace it"):
        with atomic_dir(target) as tmp:
            (tmp / "a.txt").write_text("new")
    assert target.read_text() == "mine" and hidden(tmp_path) == []


def test_a_reader_removes_the_whole_temporary_copy_a_killed_writer_left(tmp_path):
    target, code = old_dir_and_writer(tmp_path)
    assert_killed(run_python(code, fault="dir:written@d"))
    assert len(hidden(tmp_path)) == 1  # the dead writer's .d.PID-xxxx.tmp
    recover_dir(target)
    assert hidden(tmp_path) == [] and (target / "a.txt").read_text() == "old"


def test_a_live_writers_temporary_is_left_alone(tmp_path):
    target = tmp_path / "d"
    live = tmp_path / f".d.{os.getppid()}-abc.tmp"  # a writer that is still running (our parent)
    live.mkdir()
    with atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("x")
    assert hidden(tmp_path) == [live.name]


# ------------------------------------------------------------------------------------------ heads

HEAD_SCRIPT = """
import numpy as np
from lwx_edge.heads import LogisticHead
rng = np.random.default_rng({seed})
X = rng.normal(size=(40, 8)).astype(np.float32)
y = np.repeat(["a", "b", "c", "d"], 10)
LogisticHead(C=1.0).fit(X, y).save({path!r})
"""


@pytest.mark.parametrize("step", DIR_STEPS)
def test_a_head_save_killed_at_each_step_keeps_a_loadable_head(tmp_path, step):
    from lwx_edge.heads import load_head

    path = tmp_path / "head"
    r = run_python(HEAD_SCRIPT.format(seed=0, path=str(path)))
    assert r.returncode == 0, r.stderr[-2000:]
    old = load_head(path).coef_
    assert_killed(run_python(HEAD_SCRIPT.format(seed=1, path=str(path)), fault=f"{step}@head"))
    coef = load_head(path).coef_  # a killed save between the renames is put back by the reader
    assert np.array_equal(coef, old) == (step not in NEW_AFTER)
    assert run_python(HEAD_SCRIPT.format(seed=2, path=str(path))).returncode == 0
    assert hidden(tmp_path) == []


# ------------------------------------------------------------------------------------------ bundles

BUNDLE_SCRIPT = """
from conftest import make_tiny_bundle
make_tiny_bundle({{"tokenizer": {tok!r}}}, {path!r}, seed={seed})
"""


@pytest.mark.parametrize("step", [*DIR_STEPS, "file:written@manifest.json", "file:synced@config.json"])
def test_a_bundle_save_killed_at_each_step_keeps_a_verified_bundle(tiny_corpus, tmp_path, step):
    from conftest import make_tiny_bundle

    path = make_tiny_bundle(tiny_corpus, tmp_path / "bundle", seed=0)
    old = Bundle.load(path).sha256("model.safetensors")
    fault = step if "@" in step else f"{step}@bundle"
    assert_killed(run_python(BUNDLE_SCRIPT.format(tok=str(tiny_corpus["tokenizer"]), path=str(path), seed=1),
                             fault=fault))
    now = Bundle.load(path).sha256("model.safetensors")  # every file verified
    assert (now == old) == (fault.split("@")[0] not in NEW_AFTER)
    make_tiny_bundle(tiny_corpus, path, seed=2)
    assert hidden(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("step", ["file:written@manifest.json", "dir:old-moved@bundle", "dir:renamed@bundle"])
def test_an_export_in_place_killed_at_each_step_keeps_a_verified_bundle(tiny_bundle, tmp_path, step):
    """The export rewrites parity.json and manifest.json in a copy of the bundle and swaps it in."""
    pytest.importorskip("onnx")
    from lwx_edge import Encoder

    path = tmp_path / "bundle"
    shutil.copytree(tiny_bundle, path)
    code = f"from lwx_edge.export import export_bundle; export_bundle({str(path)!r}, formats=('onnx',))"
    assert_killed(run_python(code, fault=step))
    bundle = Bundle.load(path)  # verified, the old bundle or the exported one, never a mix
    assert bundle.has("model.onnx") == (step.split("@")[0] in NEW_AFTER)
    assert (path / "model.onnx").exists() == bundle.has("model.onnx")
    Encoder.load(path).embed(["the cat"])
    if step == "dir:old-moved@bundle":  # the next export recovers and cleans up
        from lwx_edge.export import export_bundle

        export_bundle(path, formats=("onnx",))
        assert Bundle.load(path).has("model.onnx") and hidden(tmp_path) == []


# ------------------------------------------------------------------------------------------ checkpoints

@pytest.mark.slow
@pytest.mark.parametrize("step", ["file:written@state.json#2", "dir:old-moved@checkpoint",  # (the first save
                                  "dir:renamed@checkpoint#2"])                                # moves nothing)
def test_training_killed_while_saving_a_checkpoint_resumes_from_the_last_complete_one(tiny_corpus, tmp_path,
                                                                                      step):
    from lwx_edge.training.config import TrainConfig
    from lwx_edge.training.model import ModelConfig
    from lwx_edge.training.trainer import train

    run = tmp_path / "run"
    cfg = TrainConfig(corpus=[str(tiny_corpus["train_fr"])], out_dir=str(run), tokenizer=str(tiny_corpus["tokenizer"]),
                      model=ModelConfig(d_model=32, n_heads=4, d_ff=64, max_len=32), batch_size=8, warmup_steps=2,
                      max_steps=6, teacher="none", eval_every=0, save_every=2, log_every=1, dev_holdout=16, threads=1)
    conf = tmp_path / "cfg.json"
    conf.write_text(json.dumps(cfg.to_dict()))
    assert_killed(run_cli(["train", "--config", conf], fault=step))  # the second save: after step 4
    recover_dir(run / "checkpoint")
    saved = json.loads((run / "checkpoint" / "state.json").read_text())["step"]
    assert saved == (4 if step.startswith("dir:renamed") else 2)  # the last complete checkpoint
    train(cfg, resume=True)
    steps = [r["step"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if "loss" in r]
    assert steps == list(range(1, 7))  # resumed after `saved`, no step twice
    assert hidden(run) == [] and (run / "bundle" / "manifest.json").is_file()


# ------------------------------------------------------------------------------------------ index

@pytest.mark.parametrize("step", ["file:synced", "file:renamed"])
def test_an_index_creation_killed_leaves_no_index_or_a_whole_one(tiny_bundle, tmp_path, step):
    from lwx_edge import Encoder, Index
    from lwx_edge.index import IndexFileError

    path = tmp_path / "notes.lwxindex"
    code = f"""
        from lwx_edge import Encoder, Index
        Index.open({str(path)!r}, Encoder.load({str(tiny_bundle)!r}, backend="torch"), create=True)
    """
    assert_killed(run_python(textwrap.dedent(code), fault=f"{step}@notes.lwxindex"))
    enc = Encoder.load(tiny_bundle, backend="torch")
    if step in NEW_AFTER:
        with Index.open(path, enc) as ix:
            assert len(ix) == 0
    else:
        with pytest.raises(IndexFileError, match="no such index file"):
            Index.open(path, enc)
    with Index.open(path, enc, create=step not in NEW_AFTER) as ix:
        ix.add(["a"], ["the cat"])
    with Index.open(path, enc) as ix:
        assert len(ix) == 1
    assert not [n for n in hidden(tmp_path) if n.endswith(".tmp")]
