#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP: scripts/check-commits on temporary repositories, each a baseline
commit and the commits after it, good and bad; a shallow clone without the
baseline and a baseline off HEAD's history fail with the reason."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "formats"))
from tap import Tap  # noqa: E402

CHECK = os.path.join(HERE, "..", "check-commits")
ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
           GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
           GIT_CONFIG_NOSYSTEM="1", HOME=tempfile.gettempdir())


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "commit.gpgsign=false"] +
                          list(args), env=ENV, check=True,
                          stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE).stdout.decode().strip()


def commit(repo, msg):
    """An empty commit whose message is MSG exactly; its hash."""
    path = os.path.join(repo, ".git", "msg")
    with open(path, "w") as f:
        f.write(msg)
    git(repo, "commit", "-q", "--allow-empty", "--cleanup=verbatim",
        "-F", path)
    return git(repo, "rev-parse", "HEAD")


def new_repo(tmp, name):
    repo = os.path.join(tmp, name)
    subprocess.run(["git", "init", "-q", "-b", "main", repo], env=ENV,
                   check=True)
    return repo, commit(repo, "a very long subject of the history before "
                        "the baseline, which stays as it was written by "
                        "its author\n")


def check(repo, base):
    p = subprocess.run([sys.executable, CHECK, "-C", repo, base], env=ENV,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode() + p.stderr.decode()


GOOD = [
    "agent: read the command id once\n\nWhy, with the numbers.\n",
    "scripts/vm: name the guest's kernel\n",
    "bpf, docs: say which programs attach\n\nBody.\n",
    "libhmbtrace README: the prefetch distance\n\nBody.\n",
    'Revert "agent: read the command id once"\n\nThis reverts it.\n',
    "x" * 10 + ": " + "y" * 60 + "\n",  # exactly 72
]

BAD = [
    ("a subject of 73 characters", "x" * 10 + ": " + "y" * 61 + "\n",
     "not ok 2 - subjects of at most 72"),
    ("a subject with no area", "Read the command id once\n\nBody.\n",
     "not ok 3 - subjects of the form"),
    ("an area of four words", "the agent now reads: the id once\n",
     "not ok 3 - subjects of the form"),
    ("no space after the colon", "agent:read the id once\n",
     "not ok 3 - subjects of the form"),
    ("an empty summary", "agent: \n", "not ok 3 - subjects of the form"),
    ("no blank line after the subject",
     "agent: read the id once\nbecause it is cheaper\n",
     "not ok 4 - a blank line after the subject"),
]


def main():
    tap = Tap()
    with tempfile.TemporaryDirectory() as tmp:
        repo, base = new_repo(tmp, "good")
        for msg in GOOD:
            commit(repo, msg)
        # a merge commit's subject is git's and is not checked
        git(repo, "checkout", "-q", "-b", "side")
        commit(repo, "side: a commit on a branch\n")
        git(repo, "checkout", "-q", "main")
        git(repo, "merge", "-q", "--no-ff", "-m",
            "Merge branch 'side' of a long name, longer than any subject "
            "that the check lets through", "side")
        rc, out = check(repo, base)
        tap.ok(rc == 0 and "not ok" not in out and
               "(%d commits after" % (len(GOOD) + 1) in out,
               "good commits after the baseline pass (the long subject "
               "before it and the merge are not checked)", out)
        rc, out = check(repo, git(repo, "rev-parse", "HEAD"))
        tap.ok(rc == 0 and "(0 commits after" in out,
               "no commit after the baseline passes, and says so", out)

        for i, (what, msg, want) in enumerate(BAD):
            r, b = new_repo(tmp, "bad%d" % i)
            commit(r, GOOD[0])
            sha = commit(r, msg)
            commit(r, GOOD[1])
            rc, out = check(r, b)
            tap.ok(rc == 1 and want in out and sha[:12] in out and
                   out.count("not ok") == 1,
                   "%s fails, naming the commit" % what, out)

        # a shallow clone of one commit lacks the baseline
        shallow = os.path.join(tmp, "shallow")
        subprocess.run(["git", "clone", "-q", "--depth", "1",
                        "file://" + repo, shallow], env=ENV, check=True)
        rc, out = check(shallow, base)
        tap.ok(rc == 1 and "not ok 1" in out and
               "git fetch --unshallow" in out,
               "a shallow clone without the baseline fails and says "
               "how to fetch it", out)
        # a full clone (what CI makes) has it
        full = os.path.join(tmp, "full")
        subprocess.run(["git", "clone", "-q", "file://" + repo, full],
                       env=ENV, check=True)
        rc, out = check(full, base)
        tap.ok(rc == 0 and "not ok" not in out, "a full clone passes", out)

        rc, out = check(repo, "0" * 40)
        tap.ok(rc == 1 and "is not in this repository" in out,
               "a baseline missing from the history fails", out)
        side = git(repo, "rev-parse", "side")
        r2, _ = new_repo(tmp, "other")
        git(r2, "fetch", "-q", repo, "side")
        rc, out = check(r2, side)
        tap.ok(rc == 1 and "is not an ancestor of HEAD" in out,
               "a baseline off HEAD's history fails", out)
        plain = os.path.join(tmp, "plain")
        os.mkdir(plain)
        rc, out = check(plain, base)
        tap.ok(rc == 1 and "no HEAD commit" in out and
               "not a git repository" in out,
               "a directory that is no clone fails with git's reason", out)
        rc, out = check(repo, "--bogus")
        tap.ok(rc == 2 and "usage:" in out, "a bad option is a usage error",
               out)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
