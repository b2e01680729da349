"""The example of ModelTrainer.from_recipe's docstring (sagemaker-train/src/sagemaker/train/
model_trainer.py), as written: the SDK clones the recipes repository from GitHub and builds the
trainer from it. Spotline refuses the constructor before it reaches the network."""

from sagemaker.train import ModelTrainer
from sagemaker.train.configs import Compute

recipe_overrides = {
    "run": {
        "results_dir": "/opt/ml/model",
    },
    "model": {"data": {"use_synthetic_data": True}},
}

compute = Compute(instance_type="ml.p5.48xlarge", keep_alive_period_in_seconds=3600)

trainer = ModelTrainer.from_recipe(
    training_recipe="fine-tuning/deepseek/hf_deepseek_r1_distilled_llama_8b_seq8k_gpu_fine_tuning",
    recipe_overrides=recipe_overrides,
    compute=compute,
)
