#include "apply_template_cli.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lantern/chat_template.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/tokenizer.h"

namespace lantern {

int run_apply_template_command(const std::string& model_path, const std::string& conversation_path,
                               bool add_generation_prompt, std::ostream& out, std::ostream& err) {
    try {
        std::ifstream in(conversation_path, std::ios::binary);
        if (!in) throw Error(ErrorCode::Io, "cannot open " + conversation_path);
        std::stringstream text;
        text << in.rdbuf();
        nlohmann::ordered_json conversation;
        try {
            conversation = nlohmann::ordered_json::parse(text.str());
        } catch (const nlohmann::json::exception& e) {
            throw Error(ErrorCode::InvalidArgument, conversation_path + " is not valid JSON: " + e.what());
        }
        nlohmann::ordered_json messages = conversation, tools = nullptr;
        const auto gguf = GgufFile::open(model_path);
        ChatTemplate chat = ChatTemplate::from_gguf(*gguf);
        if (conversation.is_object()) {
            messages = conversation.value("messages", nlohmann::ordered_json());
            tools = conversation.value("tools", nlohmann::ordered_json());
            const auto kwargs = conversation.value("chat_template_kwargs", nlohmann::ordered_json::object());
            if (kwargs.contains("enable_thinking"))
                chat.set_thinking(kwargs["enable_thinking"].is_boolean() &&
                                  kwargs["enable_thinking"].get<bool>());
        }
        if (!messages.is_array())
            throw Error(ErrorCode::InvalidArgument,
                        conversation_path + ": expected a messages array, or an object with one");
        const auto tokenizer = Tokenizer::from_gguf(*gguf);
        if (!chat.uses_model_template()) err << "lantern-cli: rendering with " << chat.description() << "\n";
        out << chat.apply(*tokenizer, messages, tools, add_generation_prompt) << std::flush;
        return 0;
    } catch (const Error& e) {
        err << "lantern-cli: " << error_code_name(e.code()) << ": " << e.what() << "\n";
        return 1;
    }
}

}  // namespace lantern
