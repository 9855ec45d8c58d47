// lantern-cli --tokenize / --detokenize: what a model's tokenizer makes of a text, and back.
//
// Both commands only need the tokenizer, so they work on vocab-only GGUF files (tokenizer
// metadata, no tensors) and on sentencepiece tokenizer.model files alike.
#pragma once
#include <iostream>
#include <string>

namespace lantern {

// Prints the ids of `text` as the model sees user text (no BOS) on the first line, space separated,
// then each token's piece on a line of its own (control characters inside a piece are written as
// escapes such as \n, so that every piece stays on one line). Returns the process exit status:
// 0, or 1 after printing the error to `err`.
int run_tokenize_command(const std::string& model_path, const std::string& text,
                         std::ostream& out = std::cout, std::ostream& err = std::cerr);

// Prints the text of `ids_csv` ("1,2,3"; spaces allowed) followed by a newline. Returns 0, or 1
// after printing the error (an unreadable model, an id that is not a number or not in the
// vocabulary) to `err`.
int run_detokenize_command(const std::string& model_path, const std::string& ids_csv,
                           std::ostream& out = std::cout, std::ostream& err = std::cerr);

}  // namespace lantern
