"""The parsed trees ``parse`` keeps and the answers kept about them (``TreeMemo``): one text,
one shared tree (also when threads parse it at once); the number of trees is bounded, and the
answers about a tree go with it; a tree ``parse`` did not make gets no memo; errors are not
kept."""

from __future__ import annotations

import threading

import pytest

from app.domain.checkpoint import gojson_scan as S
from app.domain.checkpoint.gojson_scan import GoSyntaxError, TreeMemo, forget, parse


@pytest.fixture(autouse=True)
def _cold() -> None:
    forget()


def test_one_text_one_tree_across_threads() -> None:
    text = '{"policyName":"static","defaultCpuSet":"0-3","checksum":1}'
    trees: list[object] = []
    threads = [threading.Thread(target=lambda: trees.append(parse(text))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(t is trees[0] for t in trees) and parse(text) is trees[0]


def test_kept_trees_and_their_answers_are_bounded() -> None:
    memo = TreeMemo()
    first = parse('{"n":0}')
    memo.put(first, "answer", "x")
    assert memo.get(first, "x") == (True, "answer")
    for i in range(1, S.SMALL_KEPT + 1):
        parse(f'{{"n":{i}}}')
    assert len(S._small) == S.SMALL_KEPT
    assert memo.get(first, "x") == (False, None)  # the tree was dropped, and its answers
    assert id(first) not in memo._kept


def test_a_tree_parse_did_not_make_gets_no_memo() -> None:
    memo = TreeMemo()
    tree = S.JObj([("n", S.GoNumber("1"))])
    memo.put(tree, "answer")
    assert memo.get(tree) == (False, None)


def test_syntax_errors_are_raised_each_time() -> None:
    for _ in range(2):
        with pytest.raises(GoSyntaxError, match="unexpected end of JSON input"):
            parse('{"n":')
