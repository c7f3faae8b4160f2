"""The package's metadata against what it holds (issue 53): the Apache-2.0
licence in LICENSE and in pyproject.toml, a distribution name that is not
the unrelated PyPI project's "spforge", a CHANGELOG entry for the version
the header gives, and every source of the package parsed as the grammar of
the oldest Python that requires-python admits. The standard library
alone (no numpy, no library): it runs anywhere the repository is."""

import ast
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*path):
    with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
        return f.read()


def project_field(text, name):
    """A top-level string field of pyproject.toml's [project] table."""
    table = re.search(r"^\[project\]\n(.*?)(?=^\[)", text, re.M | re.S).group(1)
    m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(name), table, re.M)
    return m.group(1) if m else None


class PackagingTests(unittest.TestCase):
    def setUp(self):
        self.pyproject = read("pyproject.toml")

    def test_licence(self):
        self.assertIn("Apache License\n                           Version 2.0, January 2004",
                      read("LICENSE"))
        self.assertIn('license = {text = "Apache-2.0"}', self.pyproject)
        self.assertIn('"License :: OSI Approved :: Apache Software License"', self.pyproject)

    def test_distribution_name(self):
        name = project_field(self.pyproject, "name")
        self.assertIsNotNone(name)
        self.assertNotEqual(re.sub(r"[-_.]+", "-", name).lower(), "spforge",
                            "the PyPI name spforge is an unrelated project's")
        self.assertIn(name, read("README.md"), "the README says what the distribution is named")

    def test_changelog_has_the_version(self):
        version = re.search(r'#define SPF_VERSION_STRING "([^"]+)"',
                            read("include", "spforge.h")).group(1)
        self.assertRegex(read("CHANGELOG.md"), r"(?m)^## %s\b" % re.escape(version))

    def test_sources_parse_as_the_oldest_python(self):
        spec = project_field(self.pyproject, "requires-python")
        m = re.fullmatch(r">=\s*3\.(\d+)", spec or "")
        self.assertIsNotNone(m, "requires-python %r: expected >=3.N" % spec)
        oldest = (3, int(m.group(1)))
        folder = os.path.join(ROOT, "python", "spforge")
        names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
        self.assertIn("__init__.py", names)
        for name in names:
            with self.subTest(name=name):
                ast.parse(read("python", "spforge", name), name, feature_version=oldest)


    def test_readme_is_short_and_self_contained(self):
        """The README stays a first read (at most 250 lines); every file it
        sends the reader to exists, and neither it nor docs/ points at a
        document outside the repository."""
        readme = read("README.md")
        self.assertLessEqual(len(readme.splitlines()), 250)
        for path in sorted(set(re.findall(r"`((?:docs|bench/results)/[^`\s]*)`", readme))):
            self.assertTrue(os.path.exists(os.path.join(ROOT, path)), "README names %s" % path)
        outside = re.compile(r"\b(DESIGN|BENCHMARKS|STYLE|HOPPER)\.md\b")
        docs = [os.path.join("docs", n) for n in os.listdir(os.path.join(ROOT, "docs"))]
        for path in ["README.md"] + sorted(docs):
            self.assertIsNone(outside.search(read(path)), "%s names a document not here" % path)

    def test_public_api_is_annotated(self):
        """py.typed is shipped, and every public function and method of the
        package's main module (spforge/__init__.py) says its arguments' and
        result's types, so that what type checkers read is what is there."""
        self.assertTrue(os.path.exists(os.path.join(ROOT, "python", "spforge", "py.typed")))
        tree = ast.parse(read("python", "spforge", "__init__.py"))
        checked = []

        def check(fn, where):
            public = not fn.name.startswith("_") or fn.name in ("__init__", "__call__")
            if not public:
                return
            args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
            args += [a for a in (fn.args.vararg, fn.args.kwarg) if a is not None]
            bare = [a.arg for a in args if a.annotation is None and a.arg not in ("self", "cls")]
            self.assertEqual(bare, [], "%s%s: arguments without a type" % (where, fn.name))
            if fn.name != "__init__":
                self.assertIsNotNone(fn.returns, "%s%s: no result type" % (where, fn.name))
            checked.append(where + fn.name)

        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                check(node, "")
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        check(item, node.name + ".")
        for name in ("Matrix.read", "Matrix.__init__", "Plan.__init__", "Plan.execute",
                     "reference_spmm", "cached_plan_info"):
            self.assertIn(name, checked)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=1).result.wasSuccessful() else 1)
