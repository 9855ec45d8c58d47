// lantern-chat-bench: what one frame of a streaming reply costs the UI thread, by reply length.
//
//   lantern-chat-bench [--frames N] [--break N] [--reasoning] [LENGTH ...]
//                                                    (QT_QPA_PLATFORM=offscreen to run headless)
//
// For each length (characters; default 2500 10000 30000) it shows a chat view holding a reply
// of that length being written — Markdown paragraphs with bold and inline code, a blank line
// every ~700 characters, as chat models write (--break N: every ~N; 0: one paragraph, as small
// models write; --reasoning: all of it inside a still-open <think> section) — then appends a
// word per frame, as
// MainWindow::flushStream does, and times the change and the event processing that follows (the
// layout and the repaint), in ms per frame: the number that must not grow with the reply
// (docs/decisions/0035-frame-cost-does-not-grow-with-the-reply.md). A developer tool, not
// a test: timings are for comparing builds on one machine.
#include <QApplication>
#include <QElapsedTimer>
#include <QStringList>
#include <algorithm>
#include <cstdio>

#include "chat/ChatModel.h"
#include "chat/ChatView.h"

namespace {

QString replyOfLength(int length, int breakEvery) {
    const QString sentence = QStringLiteral(
        "The quick brown fox jumps over the lazy dog, and then it runs **far away** into the `forest` where "
        "nobody can find it. ");
    QString text;
    int sinceBreak = 0;
    while (text.size() < length) {
        text += sentence;
        sinceBreak += static_cast<int>(sentence.size());
        if (breakEvery > 0 && sinceBreak >= breakEvery) {
            text += QStringLiteral("\n\n");
            sinceBreak = 0;
        }
    }
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QStringList args = app.arguments().mid(1);
    int frames = 40;
    int breakEvery = 700;
    bool reasoning = false;
    QList<int> lengths;
    for (qsizetype i = 0; i < args.size(); ++i) {
        if (args[i] == QLatin1String("--frames") && i + 1 < args.size()) {
            frames = std::max(1, args[++i].toInt());
        } else if (args[i] == QLatin1String("--reasoning")) {
            reasoning = true;
        } else if (args[i] == QLatin1String("--break") && i + 1 < args.size()) {
            breakEvery = std::max(0, args[++i].toInt());
        } else if (args[i].toInt() > 0) {
            lengths << args[i].toInt();
        } else {
            std::fprintf(stderr,
                         "usage: lantern-chat-bench [--frames N] [--break N] [--reasoning] [LENGTH ...]\n");
            return 2;
        }
    }
    if (lengths.isEmpty()) lengths = {2500, 10000, 30000};
    for (const int length : lengths) {
        ChatModel model;
        ChatView view;
        view.setModel(&model);
        view.resize(700, 800);
        view.show();
        ChatMessage reply;
        reply.role = ChatMessage::Role::Assistant;
        reply.streaming = true;
        reply.text = replyOfLength(length, breakEvery);
        if (reasoning) reply.text.prepend(QStringLiteral("<think>\n"));
        model.append(reply);
        for (int i = 0; i < 5; ++i) QApplication::processEvents();
        QElapsedTimer clock;
        clock.start();
        for (int f = 0; f < frames; ++f) {
            model.appendToMessage(0, QStringLiteral("word%1 ").arg(f));
            QApplication::processEvents();
        }
        std::printf("%6d characters: %.2f ms per frame (%d frames)\n", length,
                    static_cast<double>(clock.nsecsElapsed()) / 1e6 / frames, frames);
    }
    return 0;
}
