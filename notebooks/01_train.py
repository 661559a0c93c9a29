# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Training the models
#
# This notebook trains every architecture of the run, for every seed, on the clean training
# images, and records their clean test accuracy. The ViT and the ResNet are torchvision's own
# classes (`VisionTransformer`, `ResNet` with `BasicBlock`), adapted to small images by
# `topolip.models`; the attention-only and convolution-only stacks (no residual connections, no
# normalization) are the plain models of the paper's earlier version; training is `topolip.train.fit` (AdamW, cosine learning-rate decay,
# cross-entropy; seeded; CUDA with bfloat16 autocast when a GPU is present, else the CPU).
# Checkpoints are written atomically after every epoch under `results_dir/models/`, named by a
# hash of everything that determines them, so an interrupted run resumes and a changed parameter
# never reuses a stale model.

# %% tags=["parameters"]
results_dir = "results/quick"
dataset = "mnist"
data_root = "data/cifar10"
n_train = 4000
n_test = 1000
split_seed = 0
archs = ["vit", "resnet"]
vit = {"patch_size": 7, "num_layers": 4, "num_heads": 4, "hidden_dim": 64, "mlp_dim": 128}
resnet = {"width": 16, "blocks": [1, 1, 1, 1], "stem_kernel": 3}
attention_stack = {"patch_size": 7, "num_layers": 4, "num_heads": 4, "hidden_dim": 64}
conv_stack = {"num_layers": 4, "channels": 32, "kernel_size": 3}
seeds = [0, 1]
epochs = 8
batch_size = 128
lr = 0.002
weight_decay = 0.0001

# %%
from pathlib import Path

import pandas as pd

from topolip.data import load_dataset
from topolip.pipeline import write_table
from topolip.train import TrainConfig, checkpoint_path, default_device, fit, spec_for

data = load_dataset(dataset, n_train=n_train, n_test=n_test, seed=split_seed, root=data_root)
arch_params = {"vit": vit, "resnet": resnet, "attention_stack": attention_stack,
               "conv_stack": conv_stack}
device = default_device()
print(f"data: {data.name}, train {tuple(data.x_train.shape)}, test {tuple(data.x_test.shape)}; "
      f"device: {device}")

# %%
rows, histories = [], []
for arch in archs:
    spec = spec_for(arch, arch_params[arch], data)
    for seed in seeds:
        config = TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr,
                             weight_decay=weight_decay, seed=seed)
        ckpt = checkpoint_path(results_dir, spec, config, data)
        result = fit(spec, data, config, checkpoint=ckpt, device=device, progress=False)
        print(f"{arch} seed {seed}: test accuracy {result.test_accuracy:.3f} after {epochs} "
              f"epochs" + (f" (resumed at epoch {result.resumed_from_epoch})"
                           if result.resumed_from_epoch else ""))
        n_params = sum(p.numel() for p in result.model.parameters())
        rows.append({"arch": arch, "seed": seed, "test_accuracy": result.test_accuracy,
                     "parameters": n_params, "epochs": epochs,
                     "train_seconds": round(sum(h["seconds"] for h in result.history), 1),
                     "checkpoint": str(ckpt)})
        histories += [{"arch": arch, "seed": seed, **h} for h in result.history]

models = pd.DataFrame(rows)
_ = write_table(models, Path(results_dir) / "tables" / "models.csv",
            {"dataset": dataset, "n_train": n_train, "n_test": n_test, "split_seed": split_seed,
             "archs": archs, **{a: arch_params[a] for a in archs}, "seeds": seeds, "epochs": epochs,
             "batch_size": batch_size, "lr": lr, "weight_decay": weight_decay})
_ = write_table(pd.DataFrame(histories), Path(results_dir) / "tables" / "training.csv")

# %% [markdown]
# ## Clean test accuracy
#
# One row per trained model (architecture and seed); `parameters` counts the trainable weights.

# %%
models.drop(columns=["checkpoint"])

# %%
pd.DataFrame(histories).pivot_table(index="epoch", columns=["arch", "seed"],
                                    values="train_accuracy").round(3)
