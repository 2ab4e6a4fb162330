"""API and server presets (spec §3.9-§3.13, §8), and the API backends by name. Imports no SDK."""

from __future__ import annotations

from .preset import Lazy, Preset

CHAT = Lazy("smmile.models.api.chat_family", "ApiChatFamily")
TEXTONLY = Lazy("smmile.models.api.textonly_family", "TextOnlyFamily")

# short names accepted by `smmile run --backend`
BACKENDS = {
    "azure": Lazy("smmile.models.api.openai_backend", "AzureOpenAIBackend"),
    "azure-openai": Lazy("smmile.models.api.openai_backend", "AzureOpenAIBackend"),
    "openai": Lazy("smmile.models.api.openai_backend", "OpenAIChatBackend"),
    "openai-compatible": Lazy("smmile.models.api.openai_backend", "OpenAICompatibleBackend"),
    "anthropic": Lazy("smmile.models.api.anthropic_backend", "AnthropicBackend"),
    "ollama": Lazy("smmile.models.api.ollama_backend", "OllamaBackend"),
}

PRESETS = (
    Preset("gpt-4o", "gpt-4o", CHAT, BACKENDS["azure"], "gpt-4o",
           family_args={"answer_role": "protocol", "answer_as_parts": True, "options": {"logprobs": True}},
           notes="GPT-4o via Azure OpenAI (deployment gpt-4o); ICL answers as system turns under --protocol paper"),
    Preset("claude-3-7-sonnet", "claude-3-7-sonnet", CHAT, BACKENDS["anthropic"], "claude-3-7-sonnet-20250219",
           family_args={"answer_role": "assistant"}, notes="Claude 3.7 Sonnet, Anthropic Messages API"),
    Preset("llama33textonly", "llama33textonly", TEXTONLY, BACKENDS["ollama"], "llama3.3",
           family_args={"script": "open"}, notes="Llama 3.3 text-only baseline via ollama (open-only script)"),
    Preset("llama33textonly_mcqa", "llama33textonly", TEXTONLY, BACKENDS["ollama"], "llama3.3",
           family_args={"script": "mcqa"}, notes="Llama 3.3 text-only baseline via ollama (_mcqa script prompts)"),
)

