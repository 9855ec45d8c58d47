// Real chat templates (the corpus scripts/template-corpus fetches: the templates llama.cpp keeps
// under models/templates/) rendered by Lantern's Jinja interpreter for the conversations in
// tests/data/chat_conversations.json, compared byte for byte with Python's Jinja2 rendering them as
// transformers does (scripts/jinja-reference, run by this test: the expected text never comes from
// Lantern). A template Jinja2 refuses (raise_exception, an undefined name used as an object) must
// fail in Lantern too, with the same message where the template raised it.
#include <QProcess>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lantern/chat_template.h"
#include "lantern/jinja.h"
#include "test_support.h"

using namespace lantern;
using json = nlohmann::ordered_json;

namespace {

std::string read_file(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::filesystem::path corpus_dir() {
    return test::template_corpus_dir();
}

// The context transformers passes: messages, tools and documents (None when absent), the
// generation flag, the special tokens, and the conversation's extra keyword arguments.
json context_of(const json& conversation) {
    json ctx = json::object();
    ctx["messages"] = conversation["messages"];
    ctx["tools"] = conversation.contains("tools") ? conversation["tools"] : json(nullptr);
    ctx["documents"] = nullptr;
    ctx["add_generation_prompt"] = conversation.value("add_generation_prompt", true);
    ctx["bos_token"] = "<s>";
    ctx["eos_token"] = "</s>";
    if (conversation.contains("enable_thinking")) ctx["enable_thinking"] = conversation["enable_thinking"];
    return ctx;
}

std::string first_difference(const std::string& want, const std::string& got) {
    size_t i = 0;
    while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
    const auto around = [&](const std::string& s) {
        const size_t from = i > 60 ? i - 60 : 0;
        return json(s.substr(from, std::min<size_t>(s.size() - std::min(s.size(), from), 120))).dump();
    };
    return "first difference at byte " + std::to_string(i) + "\n      jinja2:  " + around(want) +
           "\n      lantern: " + around(got);
}

}  // namespace

class JinjaCorpus : public QObject {
    Q_OBJECT
private slots:
    void everyCorpusTemplateRendersAsJinja2Does() {
        const auto dir = corpus_dir();
        std::vector<std::filesystem::path> templates;
        if (std::filesystem::is_directory(dir)) {
            for (const auto& e : std::filesystem::directory_iterator(dir)) {
                if (e.path().extension() == ".jinja") templates.push_back(e.path());
            }
        }
        std::sort(templates.begin(), templates.end());
        if (templates.size() < 40)
            QFAIL(qPrintable(
                QString("the template corpus is missing at %1 (run scripts/template-corpus, or set "
                        "LANTERN_TEMPLATE_CORPUS)")
                    .arg(QString::fromStdString(dir.string()))));
        const json conversations =
            json::parse(read_file(test::source_path("tests/data/chat_conversations.json")));

        json cases = json::array();
        for (const auto& t : templates) {
            const std::string source = read_file(t);
            for (const auto& c : conversations) {
                cases.push_back({{"id", t.filename().string() + " / " + c["name"].get<std::string>()},
                                 {"template", source},
                                 {"context", context_of(c)},
                                 {"now", "2026-12-06T09:30:00"}});
            }
        }
        const std::string cases_path = test::temp_dir() + "/jinja_cases.json";
        std::ofstream(cases_path, std::ios::binary) << cases.dump();
        QProcess python;
        python.start("python3", {QString::fromStdString(test::source_path("scripts/jinja-reference")),
                                 QString::fromStdString(cases_path)});
        QVERIFY2(python.waitForFinished(300000), "scripts/jinja-reference did not finish");
        const QByteArray out = python.readAllStandardOutput();
        QVERIFY2(python.exitCode() == 0,
                 qPrintable("scripts/jinja-reference failed (is python3-jinja2 installed?): " +
                            QString::fromUtf8(python.readAllStandardError())));
        const json expected = json::parse(out.toStdString());
        QCOMPARE(expected.size(), cases.size());

        std::map<std::string, int> identical, total;
        std::vector<std::string> failures;
        int rendered = 0, refused = 0;
        jinja::RenderOptions options;
        options.strftime_now = test::fixed_strftime;
        for (size_t i = 0; i < cases.size(); ++i) {
            const std::string id = cases[i]["id"];
            const std::string name = id.substr(0, id.find(" / "));
            ++total[name];
            const json& want = expected[i];
            std::string got;
            std::string error;
            try {
                const auto t = jinja::Template::parse(cases[i]["template"].get<std::string>());
                got = t.render(jinja::Value::from_json(cases[i]["context"]), options).text;
            } catch (const jinja::TemplateError& e) {
                error = e.what();
                if (error.empty()) error = "(empty message)";
            }
            if (want["ok"].get<bool>()) {
                ++rendered;
                if (!error.empty()) {
                    failures.push_back(id + ": jinja2 renders it, lantern fails: " + error);
                } else if (got != want["output"].get<std::string>()) {
                    failures.push_back(id + ": " + first_difference(want["output"], got));
                } else {
                    ++identical[name];
                }
                continue;
            }
            ++refused;
            if (error.empty()) {
                failures.push_back(id + ": jinja2 fails (" + want["error"].get<std::string>() +
                                   "), lantern renders it");
            } else if (want["raised"].get<bool>() &&
                       error.find(want["error"].get<std::string>()) == std::string::npos) {
                failures.push_back(id + ": raise_exception(" + want["error"].get<std::string>() +
                                   "), lantern says: " + error);
            } else {
                ++identical[name];
            }
        }
        int templates_identical = 0;
        for (const auto& [name, n] : total) templates_identical += identical[name] == n;
        qInfo(
            "%zu templates x %zu conversations: %d rendered by jinja2, %d refused by it; %d templates agree "
            "on every "
            "conversation",
            templates.size(), conversations.size(), rendered, refused, templates_identical);
        for (const auto& f : failures) qWarning("%s", f.c_str());
        QVERIFY2(failures.empty(), qPrintable(QString("%1 of %2 renderings differ from jinja2 (listed above)")
                                                  .arg(failures.size())
                                                  .arg(cases.size())));
    }

    // Each corpus template passes ChatTemplate's probe (a plain conversation renders and shows the
    // messages), so a model shipping it chats in its own format; which ones lack a system role.
    void everyCorpusTemplateChatsInItsOwnFormat() {
        int usable = 0, without_system = 0;
        std::vector<std::string> refused;
        for (const auto& e : std::filesystem::directory_iterator(corpus_dir())) {
            if (e.path().extension() != ".jinja") continue;
            const auto t = ChatTemplate::from_source(read_file(e.path()));
            if (!t.uses_model_template()) {
                refused.push_back(e.path().filename().string() + ": " + t.fallback_reason());
                continue;
            }
            ++usable;
            without_system += !t.has_system_role();
        }
        qInfo("%d corpus templates render chats; %d of them fold system text into the first user message",
              usable, without_system);
        // The tool-use variants (models publish them beside their default template) need tools:
        // Jinja2 refuses them on a plain conversation too, and they fall back to their family.
        for (const auto& r : refused) {
            const bool tool_only =
                r.find("tool_use") != std::string::npos || r.find("firefunction") != std::string::npos;
            if (!tool_only) qWarning("refused: %s", r.c_str());
            QVERIFY2(tool_only, r.c_str());
        }
        QVERIFY(usable >= 60);
    }
};

QTEST_GUILESS_MAIN(JinjaCorpus)
#include "test_jinja_corpus.moc"
