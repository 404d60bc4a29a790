"""A corpus of real usage: small LightningModules written for this suite, each in the way a public project uses
Lightning (Lightning's own examples and tutorials, course notebooks, project templates, domain libraries, research
code). Each case names the pattern it stands for and the public module studied for it (read, never copied: the
code here is this suite's own, on synthetic data, small enough to train on a CPU in seconds).

tests/test_corpus.py trains every case under Lightning's Trainer and under the script loopgen renders: the same
weights (torch.equal), checkpoint files and logs, or a refusal at render time whose reason the case names. The
cases are chosen for the variety of Lightning they use, not for passing.

Modules: tutorials.py (Lightning's examples, tutorials and course notebooks), templates.py (project templates and
research code), domains.py (domain libraries: vision, text, audio, graphs, tabular), libraries.py (domain libraries'
own LightningModules and DataModules: self-supervised learning, geospatial, graphs, generative models, language
models, forecasting, contrastive training); cases.py gathers their cases.
"""
