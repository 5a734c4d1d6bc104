"""Loaders: every preset, every rejection reason, every input kind, on files written here."""

import json
import subprocess
import sys

import polars as pl
import pytest

from grpo_data.tables.loaders import DataError, LoadLimits, load_problems, write_load_result
from grpo_data.tables.presets import answer_after_hashes, resolve_preset
from grpo_data.tables.problems import SCHEMA, problem_id, user_prompt
from grpo_data.tables.readers import parse_level
from grpo_data.verify.final_answer import last_boxed


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(("text", "expected"), [
    ("so 3+4=7\n#### 7", "7"), ("#### 1,234", "1234"), ("no marker 5", None), ("####  ", None)])
def test_answer_after_hashes(text, expected):
    assert answer_after_hashes(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("thus \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"), ("\\boxed{1} then \\boxed{2}", "2"),
    ("\\boxed{\\{1,2\\}}", "\\{1,2\\}"), ("\\boxed{unbalanced", None), ("none", None), ("\\fbox{3}", "3")])
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


@pytest.mark.parametrize(("value", "expected"), [("Level 3", 3), (2, 2), ("5", 5), ("?", None), (None, None), (True, None)])
def test_parse_level(value, expected):
    assert parse_level(value) == expected


def test_gsm8k_preset(tmp_path, pool):
    f = write_jsonl(tmp_path / "gsm.jsonl", [
        {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3+4=7\n#### 7"},
        {"question": "How many legs do 2 cats have?", "answer": "2*4=8\n#### 8"},
        {"question": "Big number?", "answer": "#### 1,200"},
        {"question": "Missing marker", "answer": "it is 5"},
    ])
    res = load_problems(str(f), resolve_preset("gsm8k"), verifier=pool)
    assert res.table.schema == SCHEMA
    assert res.table["answer"].to_list() == ["7", "8", "1200"]
    assert res.reject_counts == {"no_extractable_answer": 1}
    assert res.table["prompt"][0].to_list() == user_prompt("Tom has 3 apples and buys 4. How many?")


def test_math_preset_parquet(tmp_path, pool):
    f = tmp_path / "math.parquet"
    pl.DataFrame({"problem": ["Compute 1/2 + 1/4.", "Find x if 2x=6."],
                  "solution": ["It is $\\boxed{\\frac{3}{4}}$.", "So $x=\\boxed{3}$."],
                  "level": ["Level 2", "Level 1"]}).write_parquet(f)
    res = load_problems(str(f), resolve_preset("math"), verifier=pool)
    assert res.table["answer"].to_list() == ["\\frac{3}{4}", "3"]
    assert res.table["level"].to_list() == [2, 1]


def test_problem_answer_preset_csv_with_numbers(tmp_path, pool):
    f = tmp_path / "pa.csv"
    f.write_text("problem,answer\nWhat is 2+2?,4\nWhat is 10/4?,\\frac{5}{2}\n")
    res = load_problems(str(f), resolve_preset("problem_answer"), verifier=pool)
    assert res.table["answer"].to_list() == ["4", "\\frac{5}{2}"]


def test_verl_preset_keeps_messages_and_source(tmp_path, pool):
    f = tmp_path / "verl.parquet"
    pl.DataFrame({
        "data_source": ["openai/gsm8k", "openai/gsm8k"],
        "prompt": [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "1+1?"}],
                   [{"role": "user", "content": "2+2?"}]],
        "ability": ["math", "math"],
        "reward_model": [{"style": "rule", "ground_truth": "2"}, {"style": "rule", "ground_truth": "4"}],
    }).write_parquet(f)
    res = load_problems(str(f), resolve_preset("verl"), verifier=pool)
    assert res.table["source"].to_list() == ["openai/gsm8k"] * 2
    assert res.table["prompt"][0].to_list()[0] == {"role": "system", "content": "Be brief."}
    assert res.table["answer"].to_list() == ["2", "4"]


def test_field_mapping_and_explicit_ids_json(tmp_path, pool):
    f = tmp_path / "custom.json"
    f.write_text(json.dumps({"data": [{"uid": "p1", "q": "3*3?", "a": 9}, {"uid": "p1", "q": "4*4?", "a": 16}]}))
    preset = resolve_preset(None, question_field="q", answer_field="a", id_field="uid")
    res = load_problems(str(f), preset, verifier=pool)
    assert res.table["id"].to_list() == ["p1"]
    assert res.table["answer"].to_list() == ["9"]
    assert res.reject_counts == {"duplicate_id": 1}


def test_every_rejection_reason_and_nothing_lost(tmp_path, pool):
    f = write_jsonl(tmp_path / "bad.jsonl", [
        {"problem": "ok one", "answer": "1"},
        "{not json",
        "[1, 2]",
        {"answer": "1"},
        {"problem": None, "answer": "1"},
        {"problem": "   ", "answer": "1"},
        {"problem": {"x": 1}, "answer": "1"},
        {"problem": "no answer"},
        {"problem": "empty answer", "answer": "  "},
        {"problem": "list answer", "answer": [1, 2]},
        {"problem": "x" * 500, "answer": "1"},
        {"problem": "weird gold", "answer": "\\frac{"},
        {"problem": "ok  one", "answer": "1"},
        {"problem": "ok one", "answer": "2"},
    ])
    res = load_problems(str(f), resolve_preset("problem_answer"), LoadLimits(max_prompt_chars=200), verifier=pool)
    assert res.table.height == 1
    assert res.reject_counts == {
        "malformed_row": 2, "missing_question": 2, "empty_question": 1, "non_string_question": 1,
        "missing_answer": 1, "empty_answer": 1, "non_string_answer": 1, "prompt_too_long": 1,
        "unparseable_gold": 1, "duplicate": 1, "conflicting_duplicate": 1,
    }
    assert res.n_read == 14 and res.table.height + len(res.rejects) == res.n_read
    out = tmp_path / "out" / "problems.parquet"
    problems, rejects = write_load_result(res, out)
    written = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert len(written) == 13 and all(r["reason"] and r["file"].endswith("bad.jsonl") for r in written)
    assert json.loads(written[-1]["raw"]) == {"problem": "ok one", "answer": "2"}
    assert pl.read_parquet(problems).height == 1


def test_ids_are_stable_hashes_of_normalized_prompt():
    a = problem_id(user_prompt("What is  2+2?"))
    assert a == problem_id(user_prompt(" What is 2+2? ")) and len(a) == 16
    assert a != problem_id(user_prompt("What is 2+3?"))


def test_save_to_disk_and_folder_inputs(tmp_path, pool):
    import datasets

    ds = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"problem": ["1+2?"], "answer": ["3"]}),
                               "test": datasets.Dataset.from_dict({"problem": ["2+2?"], "answer": ["4"]})})
    ds.save_to_disk(str(tmp_path / "ds"))
    res = load_problems(str(tmp_path / "ds"), resolve_preset("problem_answer"), split="test", verifier=pool)
    assert res.table["answer"].to_list() == ["4"]
    with pytest.raises(DataError, match="split 'dev' not found"):
        load_problems(str(tmp_path / "ds"), resolve_preset("problem_answer"), split="dev", verifier=pool)
    folder = tmp_path / "files"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", [{"problem": "5+5?", "answer": "10"}])
    pl.DataFrame({"problem": ["6+6?"], "answer": ["12"]}).write_parquet(folder / "b.parquet")
    res = load_problems(str(folder), resolve_preset("problem_answer"), verifier=pool)
    assert sorted(res.table["answer"].to_list()) == ["10", "12"]


def test_unreadable_inputs_name_the_file(tmp_path, pool):
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match="broken.parquet.*accepted inputs"):
        load_problems(str(bad), resolve_preset("problem_answer"), verifier=pool)
    with pytest.raises(DataError, match="no such file"):
        load_problems(str(tmp_path / "missing.jsonl"), resolve_preset("problem_answer"), verifier=pool)
    with pytest.raises(DataError, match="unknown preset 'gsm9k'.*gsm8k"):
        resolve_preset("gsm9k")
    with pytest.raises(DataError, match="--question-field"):
        resolve_preset(None, answer_field="a")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True, timeout=180)


def test_grpo_load_cli_exit_codes(tmp_path):
    good = write_jsonl(tmp_path / "g.jsonl", [{"problem": "1+1?", "answer": "2"}, {"problem": "q"}])
    proc = run_cli("load", "--data", str(good), "--preset", "problem_answer", "--out", str(tmp_path / "p.parquet"))
    assert proc.returncode == 0, proc.stderr
    assert "1 valid, 1 rejected" in proc.stdout and "missing_answer: 1" in proc.stdout
    assert (tmp_path / "p.rejects.jsonl").exists()
    strict = run_cli("load", "--data", str(good), "--preset", "problem_answer", "--strict", "--out", str(tmp_path / "s.parquet"))
    assert strict.returncode == 1
    none_valid = write_jsonl(tmp_path / "n.jsonl", [{"problem": "q"}])
    proc = run_cli("load", "--data", str(none_valid), "--preset", "problem_answer", "--out", str(tmp_path / "n.parquet"))
    assert proc.returncode == 1 and "no valid rows" in proc.stderr
    proc = run_cli("load", "--data", str(tmp_path / "nope.jsonl"), "--preset", "problem_answer", "--out", str(tmp_path / "x.parquet"))
    assert proc.returncode == 2 and "nope.jsonl: no such file" in proc.stderr


MESSY = ["What  is\t2+2?", " lead and trail \n", "nbsp\u00a0here", "ﬁve ligature", "fullwidth ４２",
         "sep\x1cchar", "thin\u2009space and\u3000ideographic", "e\u0301 combining", "emoji 🙂  x", "line\r\nbreak",
         "\u2028ls", "tab\t\tsoup"]


def test_columnar_ids_equal_the_python_ids_on_messy_text(tmp_path, pool):
    f = tmp_path / "messy.parquet"
    pl.DataFrame({"problem": MESSY, "answer": [str(i) for i in range(len(MESSY))]}).write_parquet(f)
    res = load_problems(str(f), resolve_preset("problem_answer"), verifier=pool)
    assert res.table.height == len(MESSY)
    assert res.table["id"].to_list() == [problem_id(user_prompt(q)) for q in MESSY]
    messages = tmp_path / "msgs.jsonl"
    write_jsonl(messages, [{"prompt": [{"role": "system", "content": q}, {"role": "user", "content": "go  on"}],
                            "reward_model": {"ground_truth": "1"}} for q in MESSY])
    res = load_problems(str(messages), resolve_preset("verl"), verifier=pool)
    assert res.table["id"].to_list() == [problem_id([{"role": "system", "content": q}, {"role": "user", "content": "go on"}])
                                         for q in MESSY]


def test_parquet_and_jsonl_give_the_same_table_and_reasons(tmp_path, pool):
    rows = [{"problem": "a", "answer": "1"}, {"problem": "b", "answer": 2}, {"problem": "c", "answer": 2.5},
            {"problem": None, "answer": "1"}, {"problem": "d"}, {"problem": "e", "answer": ""}, {"problem": " ", "answer": "3"},
            {"problem": "a", "answer": "1"}, {"problem": "a ", "answer": "9"}]
    j = load_problems(str(write_jsonl(tmp_path / "x.jsonl", rows)), resolve_preset("problem_answer"), verifier=pool)
    pl.DataFrame(rows, schema={"problem": pl.String, "answer": pl.String}).write_parquet(tmp_path / "x.parquet")
    p = load_problems(str(tmp_path / "x.parquet"), resolve_preset("problem_answer"), verifier=pool)
    assert j.table.drop("meta").equals(p.table.drop("meta"))
    assert j.rejects["reason"].to_list() == p.rejects["reason"].to_list() == [
        "missing_question", "missing_answer", "empty_answer", "empty_question", "duplicate", "conflicting_duplicate"]
    assert j.table["answer"].to_list() == ["1", "2", "2.5"]


def test_malformed_line_keeps_its_text_in_the_rejects(tmp_path, pool):
    res = load_problems(str(write_jsonl(tmp_path / "m.jsonl", [{"problem": "a", "answer": "1"}, "{broken"])),
                        resolve_preset("problem_answer"), verifier=pool)
    assert res.rejects.row(0, named=True) | {"detail": ""} == {
        "file": str(tmp_path / "m.jsonl"), "row": 1, "reason": "malformed_row", "detail": "", "raw": "{broken"}


def test_choice_and_word_golds_are_kept(tmp_path, pool):
    f = write_jsonl(tmp_path / "c.jsonl", [{"problem": "p1", "answer": "\\text{(C)}"}, {"problem": "p2", "answer": "Yes"},
                                           {"problem": "p3", "answer": "No"}, {"problem": "p4", "answer": "\\frac{"}])
    res = load_problems(str(f), resolve_preset("problem_answer"), verifier=pool)
    assert res.table["answer"].to_list() == ["\\text{(C)}", "Yes", "No"]
    assert res.reject_counts == {"unparseable_gold": 1}


def save_configs(root):
    import datasets

    for config, qs in {"algebra": ["x+1=2?", "2x=4?"], "geometry": ["angle?"], "counting": ["ways?"]}.items():
        datasets.DatasetDict({
            "train": datasets.Dataset.from_dict({"problem": qs, "solution": [f"so \\boxed{{{i + 1}}}" for i in range(len(qs))],
                                                 "level": ["Level 2"] * len(qs)}),
            "test": datasets.Dataset.from_dict({"problem": [f"{config} test?"], "solution": ["\\boxed{7}"],
                                                "level": ["Level 5"]}),
        }).save_to_disk(str(root / config))


def test_several_configs_and_splits_in_one_load(tmp_path, pool):
    save_configs(tmp_path / "math")
    res = load_problems(str(tmp_path / "math"), resolve_preset("math"), hub_config="all", verifier=pool)
    assert sorted(res.table["source"].unique().to_list()) == ["math:algebra", "math:counting", "math:geometry"]
    assert res.table.height == 4 and res.table["level"].to_list() == [2, 2, 2, 2]
    both = load_problems(str(tmp_path / "math"), resolve_preset("math"), split="train,test",
                         hub_config="algebra,geometry", verifier=pool)
    assert both.table.height == 5 and [s["label"].rsplit(":", 1)[1] for s in both.sources] == [
        "algebra[train]", "algebra[test]", "geometry[train]", "geometry[test]"]
    with pytest.raises(DataError, match="config 'topology' not found; available: algebra, counting, geometry"):
        load_problems(str(tmp_path / "math"), resolve_preset("math"), hub_config="topology", verifier=pool)


def test_numeric_answer_columns_read_as_the_record_path_writes_them(tmp_path, pool):
    pl.DataFrame({"problem": ["a", "b"], "answer": [3, 4]}).write_parquet(tmp_path / "ints.parquet")
    pl.DataFrame({"problem": ["a", "b", "c"], "answer": [3.0, 0.5, 1e20]}).write_parquet(tmp_path / "floats.parquet")
    ints = load_problems(str(tmp_path / "ints.parquet"), resolve_preset("problem_answer"), verifier=pool)
    floats = load_problems(str(tmp_path / "floats.parquet"), resolve_preset("problem_answer"), verifier=pool)
    assert ints.table["answer"].to_list() == ["3", "4"]
    assert floats.table["answer"].to_list() == ["3", "0.5", "100000000000000000000"]


def test_fields_inside_json_text_keep_their_types(tmp_path, pool):
    rows = {"prompt": ["p1", "p2", "p3"],
            "reward_model": ['{"ground_truth": "7"}', '{"ground_truth": [1, 2]}', '{"style": "rule"}']}
    pl.DataFrame(rows).write_parquet(tmp_path / "v.parquet")
    res = load_problems(str(tmp_path / "v.parquet"), resolve_preset(None, "prompt", "reward_model.ground_truth"),
                        verifier=pool)
    assert res.table["answer"].to_list() == ["7"]
    assert res.rejects["reason"].to_list() == ["non_string_answer", "missing_answer"]


def test_one_odd_level_does_not_fail_the_file(tmp_path, pool):
    f = write_jsonl(tmp_path / "l.jsonl", [{"problem": "a", "answer": "1", "level": "AIME id 20190215123456789012"},
                                          {"problem": "b", "answer": "2", "level": "Level 4"}])
    res = load_problems(str(f), resolve_preset("problem_answer"), verifier=pool)
    assert res.table["level"].to_list() == [None, 4]


def test_explicit_id_collisions_are_judged_in_row_order(tmp_path, pool):
    # r2 repeats r1's prompt (a duplicate, not kept), so r3 may use r2's id; r4 takes r1's id: duplicate_id
    f = write_jsonl(tmp_path / "ids.jsonl", [
        {"uid": "A", "q": "same", "a": "1"}, {"uid": "B", "q": "same", "a": "1"},
        {"uid": "B", "q": "other", "a": "2"}, {"uid": "A", "q": "third", "a": "3"}])
    res = load_problems(str(f), resolve_preset(None, "q", "a", "uid"), verifier=pool)
    assert res.table["id"].to_list() == ["A", "B"]
    assert res.rejects["reason"].to_list() == ["duplicate", "duplicate_id"]


def test_a_downloaded_snapshot_folder_loads_only_the_asked_split(tmp_path, pool):
    snap = tmp_path / "gsm8k-snapshot" / "main"
    snap.mkdir(parents=True)
    pl.DataFrame({"problem": ["t1?", "t2?"], "answer": ["1", "2"]}).write_parquet(snap / "train-00000-of-00001.parquet")
    pl.DataFrame({"problem": ["e1?"], "answer": ["9"]}).write_parquet(snap / "test-00000-of-00001.parquet")
    res = load_problems(str(tmp_path / "gsm8k-snapshot"), resolve_preset("problem_answer"), verifier=pool)
    assert res.table["answer"].to_list() == ["1", "2"] and res.table["source"].unique().to_list() == ["gsm8k-snapshot"]
    both = load_problems(str(tmp_path / "gsm8k-snapshot"), resolve_preset("problem_answer"), split="train,test",
                         verifier=pool)
    assert both.table.height == 3
    with pytest.raises(DataError, match="named by split \\(test, train\\), none for validation"):
        load_problems(str(tmp_path / "gsm8k-snapshot"), resolve_preset("problem_answer"), split="validation",
                      verifier=pool)


def test_split_names_anywhere_in_a_file_name(tmp_path, pool):
    folder = tmp_path / "gsm8k"
    (folder / "Test").mkdir(parents=True)
    write_jsonl(folder / "gsm8k_train.jsonl", [{"problem": "a?", "answer": "1"}])
    write_jsonl(folder / "gsm8k_test.jsonl", [{"problem": "b?", "answer": "2"}])
    write_jsonl(folder / "Test" / "more.jsonl", [{"problem": "c?", "answer": "3"}])
    res = load_problems(str(folder), resolve_preset("problem_answer"), verifier=pool)
    assert res.table["answer"].to_list() == ["1"]


def test_an_explicit_id_equal_to_a_hashed_one_is_judged_in_row_order(tmp_path, pool):
    hashed = problem_id(user_prompt("first"))
    f = write_jsonl(tmp_path / "h.jsonl", [{"q": "first", "a": "1"}, {"uid": hashed, "q": "second", "a": "2"},
                                           {"q": "second", "a": "3"}])
    res = load_problems(str(f), resolve_preset(None, "q", "a", "uid"), verifier=pool)
    assert res.table["answer"].to_list() == ["1", "3"]
    assert res.rejects["reason"].to_list() == ["duplicate_id"]


def test_a_folder_of_configs_without_hub_config_says_what_to_pass(tmp_path, pool):
    save_configs(tmp_path / "math")
    with pytest.raises(DataError, match="one save_to_disk folder per config \\(algebra, counting, geometry\\); "
                                        "pass --hub-config all"):
        load_problems(str(tmp_path / "math"), resolve_preset("math"), verifier=pool)


def test_hub_configs_and_splits_through_datasets(monkeypatch, pool):
    import datasets

    calls = []

    def load_dataset(name, config, split):
        calls.append((name, config, split))
        return datasets.Dataset.from_dict({"problem": [f"{config} {split} q?"], "answer": ["5"]})

    monkeypatch.setattr(datasets, "get_dataset_config_names", lambda name: ["algebra", "geometry"])
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    res = load_problems("someone/math", resolve_preset("problem_answer"), hub_config="all", split="train,test",
                        verifier=pool)
    assert calls == [("someone/math", c, s) for c in ("algebra", "geometry") for s in ("train", "test")]
    assert sorted(res.table["source"].unique().to_list()) == ["someone/math:algebra", "someone/math:geometry"]
    monkeypatch.setattr(datasets, "get_dataset_config_names", lambda name: ["all", "algebra"])
    calls.clear()
    load_problems("someone/math", resolve_preset("problem_answer"), hub_config="all", verifier=pool)
    assert calls == [("someone/math", "all", "train")]  # the dataset's own union config, not it and its parts
