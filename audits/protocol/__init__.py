"""What every audit shares: findings, thresholds and the run context it reads."""
