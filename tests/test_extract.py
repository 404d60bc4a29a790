"""The renderer's lifting of marked blocks out of main() (loopgen/render/extract.py): what goes in, what comes
back, and the blocks it refuses. Each case runs the code before and after, and compares what it does."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
import yaml

from loopgen.errors import LoopgenError
from loopgen.render.extract import extract_helpers
from tests.helpers import render

ROOT = Path(__file__).resolve().parents[1]


def lifted(source: str) -> str:
    return extract_helpers(textwrap.dedent(source).lstrip("\n"))


def run(source: str) -> object:
    namespace: dict = {}
    exec(compile(source, "<script>", "exec"), namespace)  # noqa: S102 - the test's own code
    return namespace["main"]()


def test_parameters_are_the_locals_it_reads_and_returns_what_main_reads_after() -> None:
    source = """
    def main():
        a, b = 2, 3
        # loopgen:extract combine: Add them up.
        total = a + b
        unused = total * 2
        print(unused)
        # loopgen:end
        return total
    """
    text = lifted(source)
    assert "    total = combine(a, b)\n" in text
    assert 'def combine(a, b):\n    """Add them up."""\n' in text
    assert "    return total\n" in text.split("def combine")[1]
    assert "unused" not in text.split("def combine")[0]  # used only in the block: it stays there
    assert run(text) == run(textwrap.dedent(source)) == 5


def test_a_function_defined_in_the_block_takes_nothing_for_its_own_locals() -> None:
    """A closure the block defines returns its own locals under names main() binds later: they are the closure's,
    not the block's reads, so the lifted function does not take them (main() has not bound them yet)."""
    source = """
    def main():
        scale = 3
        # loopgen:extract build: Build the loader.
        holder = {}

        def load():
            data = [scale, scale * 2]
            size = len(data)
            return data, size

        holder["load"] = load
        # loopgen:end
        data, size = holder["load"]()
        return data, size
    """
    text = lifted(source)
    assert "    holder = build(scale)\n" in text and "def build(scale):" in text
    assert run(text) == run(textwrap.dedent(source)) == ([3, 6], 2)


def test_a_loop_variable_in_an_enclosing_try_is_the_loops_own() -> None:
    """A block inside a try statement: a later loop in its handler that binds the same name (its own variable)
    reads none of the block's, so the name does not come back; a plain read after the block still does."""
    source = """
    def main(items=(1, 2)):
        try:
            # loopgen:extract walk: Walk the items.
            for item in items:
                print(item)
            last = items[-1]
            # loopgen:end
            1 / 0
        except ZeroDivisionError:
            for item in items:
                print(item)
            return last
    """
    text = lifted(source)
    assert "        last = walk(items)\n" in text
    assert run(text) == run(textwrap.dedent(source)) == 2
    read_after = source.replace("            return last", "            return item")
    assert "        item = walk(items)\n" in lifted(read_after)


def test_a_name_bound_on_one_path_comes_back_as_none_on_the_others() -> None:
    source = """
    def main(flag=False):
        # loopgen:extract maybe: Bind on one path.
        if flag:
            value = 1
            print(value)
        # loopgen:end
        return value if flag else None
    """
    text = lifted(source)
    assert "    value = None  # bound on one path only\n" in text
    assert run(text) is None


def test_a_name_rebound_first_is_not_a_parameter_but_one_read_first_is() -> None:
    text = lifted("""
        def main():
            count, step = 0, 10
            # loopgen:extract advance: Count on.
            count = 5
            step = step + count
            print(count, step)
            # loopgen:end
            return count, step
        """)
    assert "count, step = advance(step)" in text
    assert run(text) == (5, 15)


def test_a_loop_variable_is_the_loops_own() -> None:
    text = lifted("""
        def main():
            items = [1, 2]
            item = None
            # loopgen:extract show: Print them.
            print(len(items))
            for item in items:
                print(item)
            # loopgen:end
            for item in items:
                print(item)
        """)
    assert "show(items)" in text
    assert "item = show" not in text


def test_the_block_moves_with_its_global_statement() -> None:
    source = """
    LIMIT = 1


    def main():
        # loopgen:extract configure: Read the options.
        global LIMIT
        LIMIT = 7
        print(LIMIT)
        # loopgen:end
        return LIMIT
    """
    text = lifted(source)
    assert "global LIMIT" in text.split("def configure")[1]
    assert run(text) == 7


def test_a_global_the_function_also_assigns_is_refused() -> None:
    with pytest.raises(LoopgenError, match="assigns the global"):
        lifted("""
            LIMIT = 1


            def main():
                global LIMIT
                # loopgen:extract configure: Read the options.
                LIMIT = 7
                print(LIMIT)
                print(LIMIT + 1)
                # loopgen:end
            """)


@pytest.mark.parametrize("statement", ["return 1", "yield 1"])
def test_a_block_that_leaves_the_function_is_refused(statement: str) -> None:
    with pytest.raises(LoopgenError, match="leaves the enclosing function"):
        lifted(f"""
            def main():
                # loopgen:extract leave: Leave early.
                print(1)
                print(2)
                {statement}
                # loopgen:end
            """)


def test_a_break_of_the_enclosing_loop_is_refused_but_one_of_its_own_is_not() -> None:
    with pytest.raises(LoopgenError, match="leaves the enclosing function"):
        lifted("""
            def main():
                for i in range(3):
                    # loopgen:extract stop: Stop.
                    print(i)
                    print(i + 1)
                    break
                    # loopgen:end
            """)
    text = lifted("""
        def main():
            # loopgen:extract first: The first even number.
            for i in range(5):
                if i and i % 2 == 0:
                    break
            # loopgen:end
            return i
        """)
    assert run(text) == 2


def test_a_function_defined_in_the_block_must_not_read_a_variable_rebound_later() -> None:
    with pytest.raises(LoopgenError, match="reads step, rebound after the block"):
        lifted("""
            def main():
                step = 0
                # loopgen:extract reporter: A reporter.
                def report():
                    return step
                print(report())
                # loopgen:end
                step = 1
                return report()
            """)


def test_a_function_main_defines_reads_what_the_block_returns() -> None:
    text = lifted("""
        def main():
            def show():
                return loader
            # loopgen:extract load: Load.
            loader = [1]
            loader.append(2)
            print(loader)
            # loopgen:end
            return show()
        """)
    assert "loader = load()" in text
    assert run(text) == [1, 2]


def test_an_empty_block_leaves_nothing_and_a_taken_name_is_refused() -> None:
    text = lifted("""
        def main():
            # loopgen:extract nothing: Nothing here.
            # loopgen:end
            return 1
        """)
    assert "nothing" not in text and run(text) == 1
    with pytest.raises(LoopgenError, match="defines main already"):
        lifted("""
            def main():
                # loopgen:extract main: Again.
                x = 1
                y = x + 1
                print(y)
                # loopgen:end
            """)


def test_markers_must_pair() -> None:
    with pytest.raises(LoopgenError, match="has no loopgen:end"):
        lifted("def main():\n    # loopgen:extract open: Open.\n    x = 1\n")
    with pytest.raises(LoopgenError, match="without a loopgen:extract"):
        lifted("def main():\n    x = 1\n    # loopgen:end\n")


def test_helpers_follow_the_function_in_the_order_of_their_blocks() -> None:
    text = lifted("""
        def main():
            # loopgen:extract first: One.
            a = 1
            a += 1
            print(a)
            # loopgen:end
            # loopgen:extract second: Two.
            b = a + 1
            b += 1
            print(b)
            # loopgen:end
            return b


        def other():
            pass
        """)
    assert text.index("def main") < text.index("def first") < text.index("def second") < text.index("def other")
    assert run(text) == 4


def test_a_short_block_stays_in_place_without_its_markers() -> None:
    text = lifted("""
        def main():
            # loopgen:extract build: The model.
            model = [1, 2]
            print(model)
            # loopgen:end
            return model
        """)
    assert "def build" not in text and "loopgen:" not in text
    assert "    model = [1, 2]\n    print(model)\n" in text


def test_main_of_a_spec_with_lightnings_defaults_reads_as_the_loop(tmp_path: Path) -> None:
    """examples/lit_classifier.yaml with the bar, the CSV logger, the default checkpoint and the summary on: main()
    is at most 150 lines, what it does once is in helpers named for it, and the loop stays in main()."""
    spec = yaml.safe_load((ROOT / "examples" / "lit_classifier.yaml").read_text(encoding="utf-8"))
    for flag in ("logger", "enable_checkpointing", "enable_progress_bar"):
        spec["trainer"].pop(flag, None)
    text = render(spec, tmp_path)
    functions = {node.name: node for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)}
    main = functions["main"]
    assert main.end_lineno - main.lineno + 1 <= 150
    assert {"set_up", "build", "resume", "sanity_check", "resume_loop", "report"} <= functions.keys()
    assert any(isinstance(node, ast.While) for node in ast.walk(main))  # the epoch loop


def test_a_comprehensions_own_variables_are_neither_read_nor_given_back() -> None:
    """A comprehension's variables live in its own scope: the block does not read `state` from main() (main binds
    none before it), and does not give back its `item` to the comprehension after it that names its own."""
    source = """
    def main():
        items = [1, 2]
        # loopgen:extract setup: Make things.
        doubled = [state * 2 for state in items]
        total = sum(doubled)
        item = total + 1
        print(item)
        # loopgen:end
        return [item for item in range(total)], items
    """
    text = lifted(source)
    assert "    total = setup(items)\n" in text
    assert "def setup(items):" in text and "    return total\n" in text.split("def setup")[1]
    assert run(text) == run(textwrap.dedent(source))
