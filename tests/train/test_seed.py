"""train/seed.py: one call seeds every stream a run draws from, whatever the process imported before."""
import subprocess
import sys


def test_the_libraries_a_run_imports_later_do_not_move_the_seeded_python_stream():
    """Importing scikit-learn (a run's first evaluation) draws from Python's stream (rich, at import): after
    seed_everything, that draw is already behind us, so a fresh process and a resumed one agree."""
    code = ("import random; from genfeat.train.seed import seed_everything\n"
            "seed_everything(3); s = random.getstate()\n"
            "import sklearn.metrics, sklearn.linear_model\n"
            "assert random.getstate() == s, 'the import drew from the seeded stream'\n"
            "random.seed(3); assert random.getstate() == s, 'not the seeded stream'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-1000:]
