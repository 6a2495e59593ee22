"""Trace readers on records of an odd shape (referee/audit/ingest/readers): one error each, the file reads on."""

import json

from referee.audit.ingest.readers import read_traces, sniff_format


def test_a_record_of_an_odd_shape_is_one_error_and_the_file_reads_on(tmp_path):
    src = tmp_path / "chat.jsonl"
    src.write_text(json.dumps({"messages": [{"role": "user", "content": "do x"},
                                            {"role": "assistant", "tool_calls": ["x"]}]}) + "\n" +
                   json.dumps({"messages": [{"role": "user", "content": "do x"},
                                            {"role": "assistant", "content": "Done."}]}) + "\n")
    items = list(read_traces(src, "openai-chat"))
    # the odd record is one error, the next run is read, and (issue 33) the file's note that its only run has no
    # action although the file holds a tool call comes last, as one more bad record
    assert [i.error is None for i in items] == [False, True, False]
    assert "unexpected shape" in str(items[0].error)
    assert "looks misread" in str(items[2].error) and "1 of 2 records refused" in str(items[2].error)


def test_a_broken_first_record_does_not_decide_the_format(tmp_path):
    good = {"task_id": 1, "trial": 0, "reward": 1.0, "traj": [{"role": "user", "content": "hi"}],
            "info": {"task": {"instruction": "Say hi"}}}
    src = tmp_path / "tau.jsonl"
    src.write_text('{"task_id": 0, "traj": [\n' + json.dumps(good) + "\n")
    assert sniff_format(src) == "tau-bench"
