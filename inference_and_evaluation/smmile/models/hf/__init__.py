"""Local open-weight models through transformers: families (prompt + CSV rows per original script), the HF
backend (loading, batching, error capture), the torchvision-less processor fallback, and LLaVA-Med."""
