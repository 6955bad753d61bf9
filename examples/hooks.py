# %% [markdown]
# # Hook points: read and patch any named activation
#
# Every bindscale model routes its named activations through `HookPoint`s
# (`bindscale.models.hooks`). `run_with_cache` returns the activations of one forward
# pass; `run_with_hooks` replaces them (ablation, activation patching). Runs in seconds on a
# CPU: `python examples/hooks.py`.

# %%
import torch

import bindscale as bs
from bindscale.models.hooks import hook_names, run_with_cache, run_with_hooks
from bindscale.models.transformer import Transformer

torch.manual_seed(0)

# %% [markdown]
# ## A trained MLP student
#
# `run_trial` trains one hyperteacher trial and returns the trained network, a plain MLP
# whose hook points are `hook_input`, `hook_hidden.{i}` and `hook_output`.

# %%
config = {
    "task": {"M": 6, "K": 2, "holdout": 0.3},
    "model": {"kind": "mlp", "width": 32, "depth": 2},
    "train": {"steps": 150, "batch_tasks": 32, "n_evals": 1, "eval_tasks": 32, "probe_tasks": 16,
              "probe_samples": 2},
    "seed": 0,
}
record, mlp = bs.run_trial(config)
print(f"MLP trained: held-out R² {record['metrics']['r2_heldout']:.3f}; hook points {hook_names(mlp)}")
batch = bs.build_tasks(config).sample(64, torch.Generator().manual_seed(1))

with torch.no_grad():
    out, cache = run_with_cache(mlp, batch.code, batch.x, names=["hook_hidden.0", "hook_hidden.1"])
print(cache)  # name → shape: (tasks, inputs, width)


def mse(pred):
    return float(((pred - batch.y) ** 2).mean())


# Ablate each unit of the last hidden layer (replace it by its mean) and see which matter most.
mean = cache["hook_hidden.1"].mean(dim=(0, 1))  # (width,)
base = mse(out)
rise = []
with torch.no_grad():
    for u in range(mean.numel()):
        def mean_ablate(h, hook, u=u):
            h = h.clone()
            h[..., u] = mean[u]
            return h
        rise.append(mse(run_with_hooks(mlp, batch.code, batch.x, hooks={"hook_hidden.1": mean_ablate})) - base)
top = sorted(range(len(rise)), key=lambda u: -rise[u])[:3]
print(f"MLP: loss {base:.4f}; the three units whose mean ablation hurts most: "
      + ", ".join(f"{u} (+{rise[u]:.4f})" for u in top))

# %% [markdown]
# ## An (untrained) transformer
#
# Points: `hook_embed`, then per block `blocks.{i}.hook_resid_pre`, `.attn.hook_pattern`,
# `.attn.hook_z` (per head), `.hook_attn_out`, `.hook_resid_mid`, `.mlp.hook_post`,
# `.hook_mlp_out`, `.hook_resid_post`, and `hook_ln_final` (see the model's docstring).

# %%
model = Transformer(vocab_size=12, n_layers=2, d_model=32, n_heads=4, max_len=16,
                    generator=torch.Generator().manual_seed(0)).eval()
clean = torch.randint(0, 12, (8, 10), generator=torch.Generator().manual_seed(2))
corrupt = clean.clone()
corrupt[:, 2] = (corrupt[:, 2] + 5) % 12  # one token changed

with torch.no_grad():
    logits, cache = run_with_cache(model, clean)
    print(f"transformer: {len(cache)} cached points; attention pattern of layer 1 "
          f"{tuple(cache['blocks.1.attn.hook_pattern'].shape)} (batch, head, query, key)")

    # Head ablation: a hook that zeros head 3 of layer 1 (the model's own `ablate=` does the same).
    def zero_head(z, hook):
        z = z.clone()
        z[:, 3] = 0
        return z

    ablated = run_with_hooks(model, clean, hooks={"blocks.1.attn.hook_z": zero_head})
    assert torch.equal(ablated, model(clean, ablate={1: [3]}))
    print(f"ablating head 1.3 moves the last position's logits by {float((ablated - logits)[:, -1].abs().mean()):.2e}")

    # Activation patching: put the clean residual stream of one position into the corrupted run
    # and see how much of the clean output at the last position it restores.
    bad = model(corrupt)
    gap = float((bad - logits)[:, -1].abs().mean())
    for pos in range(10):
        def patch(x, hook, pos=pos):
            x = x.clone()
            x[:, pos] = cache[hook.name][:, pos]
            return x
        out = run_with_hooks(model, corrupt, hooks={"blocks.1.hook_resid_pre": patch})
        left = float((out - logits)[:, -1].abs().mean())
        print(f"  patch resid_pre of block 1 at position {pos}: {1 - left / gap:5.1%} of the gap closed")
print("hooks example done")
