"""The Python extractor alone on the DEV corpus's training scripts, with each case's script
arguments (taken from the case's command or from the launcher script that runs it).

    MIRROR_ROOT=/work/.mirror python bench/corpus_python.py

Reads the scripts straight from the fetched git mirrors (`git show COMMIT:path`), writes
nothing, and prints right / wrong / unknown per case and fact for the facts a Python script
can state (the rest — architecture, world size, config files — belong to other stages and
are counted as `missing`). The merge here is the plan's own precedence (`plan.merge`).
"""
import json, os, subprocess, sys, shlex
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
SHARED = os.environ.get("PREFLIGHT_SHARED") or os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared")
from preflight.extract.python import extract
C = {c['id']: c for c in json.load(open(os.path.join(SHARED, 'corpus', 'dev-cases.json')))}
E = json.load(open(os.path.join(SHARED, 'corpus', 'dev-expected.json')))['cases']
# case -> (script, argv)
def argv_after(cmd, script):
    w = shlex.split(cmd); i = [j for j,t in enumerate(w) if t.endswith(script.split('/')[-1])][0]
    return w[i+1:]
CASES = {
 'alpaca_llama7b_deepspeed_zero3_offload_4gpu': ('train.py', None),
 'fastchat_llama7b_qlora_zero2': ('fastchat/train/train_lora.py', None),
 'trl_sft_qwen2_05b_lora_1gpu': ('trl/scripts/sft.py', None),
 'pytorch_examples_word_lm_transformer_adamw': ('word_language_model/main.py', None),
 'x_transformers_enwik8_char_gpt': ('train_enwik8.py', []),
 'accelerate_slurm_multinode_fsdp_bert_nlp': ('examples/complete_nlp_example.py', ['--mixed_precision', 'fp16']),
 'deepspeed_hello_bert_mlm_zero1_offload': ('training/HelloDeepSpeed/train_bert_ds.py', None),
 'peft_lora_fsdp_llama2_70b_8gpu': ('examples/sft/train.py', None),
}
def mirror(repo):
    root = os.environ.get("MIRROR_ROOT", "/work/.mirror")
    return os.path.join(root, repo.replace("/", "+"), "repo")
PYFACTS = None
tot = {'right':0,'wrong':0,'unknown':0,'missing':0}
for cid,(script,args) in CASES.items():
    c = C[cid]; g = mirror(c['repo'])
    if not os.path.isdir(g): print(cid, 'NO MIRROR'); continue
    try:
        text = subprocess.run(['git','--git-dir',g,'show',f"{c['commit']}:{script}"],capture_output=True,text=True,check=True).stdout
    except subprocess.CalledProcessError:
        print(cid, 'cannot read', script); continue
    if args is None:
        if cid == 'deepspeed_hello_bert_mlm_zero1_offload' or cid == 'peft_lora_fsdp_llama2_70b_8gpu':
            sh = {'deepspeed_hello_bert_mlm_zero1_offload':'training/HelloDeepSpeed/run_ds.sh','peft_lora_fsdp_llama2_70b_8gpu':'examples/sft/run_peft_fsdp.sh'}[cid]
            shtext = subprocess.run(['git','--git-dir',g,'show',f"{c['commit']}:{sh}"],capture_output=True,text=True).stdout
            joined = shtext.replace('\\\n',' ')
            line = [l for l in joined.splitlines() if script.split('/')[-1] in l][0]
            args = argv_after(line, script)
        else:
            args = argv_after(c['command'], script)
    ext = extract(script, text, args)
    facts = {}
    for n,f in ext.facts: facts[n] = f   # last wins (simplified; real merge by precedence)
    from preflight.plan import merge
    plan = merge(ext.facts)
    print(f"== {cid}  ({script}, {len(args)} args)")
    for k, exp in E[cid]['facts'].items():
        f = plan.facts.get(k)
        ev = exp['value']
        if f is None: st='missing'; got='-'
        elif not f.known: st='unknown'; got=f'unknown({(f.reason or "")[:50]})'
        else:
            got = f.value
            if k=='lora': ok = bool(got)==bool(ev)
            else: ok = got==ev
            st = 'right' if ok else 'wrong'
            got = f'{got!r} [{f.origin.value} {f.source.line if f.source else ""}]'
        tot[st]+=1
        print(f"   {k:26s} exp={ev!r:14} {st:8s} {got}")
    print('   model:', plan.value('model'), [ (r['kind'], r.get('name') or r.get('class')) for r in ext.extras.get('model_refs',[])])
print(tot)
