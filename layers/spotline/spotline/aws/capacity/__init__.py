"""CheckTrainingStatus: observe AWS, assess, act; the queue and training plans it reads."""
