// lantern-cli --pull OWNER/REPO[:QUANT]: a model from the Hugging Face Hub (HF_ENDPOINT, HF_TOKEN)
// into the folder the app lists, with the same downloader as the app's Models dialog.
#pragma once
#include <iostream>
#include <string>

namespace lantern {

// The app's models folder: $XDG_DATA_HOME (or ~/.local/share)/Lantern/Lantern/models, as Qt's
// AppDataLocation names it for the app.
std::string default_models_dir();

// Downloads the model `spec` names ("Qwen/Qwen3-0.6B-GGUF", "...:Q8_0", or ":FILE.gguf") into
// MODELS_DIR/OWNER/REPO/: the quantisation asked for (else Q4_K_M, Q5_K_M, Q8_0 or the smallest),
// every part of a split model, each checked against the Hub's SHA-256 — after reading the first
// part's header to refuse an architecture Lantern does not run. Progress on `err`: a bar on a
// terminal, a line per 10% when piped. Prints the model's path on `out`. Returns 0, or 1 after
// printing the error, with nothing of this pull left in the folder.
int run_pull_command(const std::string& spec, const std::string& models_dir, std::ostream& out = std::cout,
                     std::ostream& err = std::cerr);

}  // namespace lantern
