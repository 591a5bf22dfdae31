//! Tests against real components the machine must have: a headless browser and a Slurm
//! cluster. Skipped as a group with `--skip system::` (README, "Two commands").

mod browser;
mod slurm;
