"""The Python tests' common main (tests/python/test_*.py): exit 77 (ctest:
skipped) when libspforge cannot be loaded or the test says why it cannot
run, else run the module's tests and print one summary line (passed,
failed, skipped, with each skip's reason). Returns the exit status."""

import sys
import unittest

import spforge


def run(module_name, skip_reason=None, banner=None):
    """skip_reason and banner: strings, or callables giving one (None:
    nothing), evaluated only once the library is known to load."""
    try:
        spforge.version()
    except OSError as e:
        print("SKIP: %s" % e)
        return 77
    why = skip_reason() if callable(skip_reason) else skip_reason
    if why:
        print("SKIP: %s" % why)
        return 77
    if banner:
        print(banner() if callable(banner) else banner)
    result = unittest.TextTestRunner(verbosity=2).run(
        unittest.defaultTestLoader.loadTestsFromModule(sys.modules[module_name]))
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed, %d skipped%s"
          % (result.testsRun - failed - len(result.skipped), failed, len(result.skipped),
             "".join("\n  skipped %s: %s" % (test.id(), why) for test, why in result.skipped)))
    return 0 if result.wasSuccessful() else 1
