<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en" sourcelanguage="en">
<context>
    <name>ApiServerControl</name>
    <message numerus="yes">
        <source>API %1 · %n repl(ies) paused for the chat</source>
        <translation>
            <numerusform>API %1 · %n reply paused for the chat</numerusform>
            <numerusform>API %1 · %n replies paused for the chat</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>API %1 · writing %n repl(ies)</source>
        <translation>
            <numerusform>API %1 · writing %n reply</numerusform>
            <numerusform>API %1 · writing %n replies</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n waiting</source>
        <translation>
            <numerusform>%n waiting</numerusform>
            <numerusform>%n waiting</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>OpenAI-compatible API at %1 — %n repl(ies) served. API replies pause while the chat writes a reply (File &gt; API Replies Wait for the Chat), and share one conversation&apos;s room in the KV cache: past it, the reply that started last waits and then goes on where it was.</source>
        <translation>
            <numerusform>OpenAI-compatible API at %1 — %n reply served. API replies pause while the chat writes a reply (File &gt; API Replies Wait for the Chat), and share one conversation&apos;s room in the KV cache: past it, the reply that started last waits and then goes on where it was.</numerusform>
            <numerusform>OpenAI-compatible API at %1 — %n replies served. API replies pause while the chat writes a reply (File &gt; API Replies Wait for the Chat), and share one conversation&apos;s room in the KV cache: past it, the reply that started last waits and then goes on where it was.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>OpenAI-compatible API at %1 — %n repl(ies) served. API replies are written in the same steps as the chat&apos;s reply, and share one conversation&apos;s room in the KV cache: past it, the reply that started last waits and then goes on where it was.</source>
        <translation>
            <numerusform>OpenAI-compatible API at %1 — %n reply served. API replies are written in the same steps as the chat&apos;s reply, and share one conversation&apos;s room in the KV cache: past it, the reply that started last waits and then goes on where it was.</numerusform>
            <numerusform>OpenAI-compatible API at %1 — %n replies served. API replies are written in the same steps as the chat&apos;s reply, and share one conversation&apos;s room in the KV cache: past it, the reply that started last waits and then goes on where it was.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>AttentionWords</name>
    <message numerus="yes">
        <source>Capture keeps %1 a token (%2 heads × %3 positions, one byte each); %n token(s) kept, at most %4.</source>
        <translation>
            <numerusform>Capture keeps %1 a token (%2 heads × %3 positions, one byte each); %n token kept, at most %4.</numerusform>
            <numerusform>Capture keeps %1 a token (%2 heads × %3 positions, one byte each); %n tokens kept, at most %4.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ContextLengthDialog</name>
    <message numerus="yes">
        <source>KV cache: %1, room for %n conversation(s) of %2 tokens at once: the chat&apos;s, and what the local API server&apos;s replies share.</source>
        <translation>
            <numerusform>KV cache: %1, room for %n conversation of %2 tokens at once: the chat&apos;s, and what the local API server&apos;s replies share.</numerusform>
            <numerusform>KV cache: %1, room for %n conversations of %2 tokens at once: the chat&apos;s, and what the local API server&apos;s replies share.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ConversationList</name>
    <message numerus="yes">
        <source>%1 · %n message(s)</source>
        <translation>
            <numerusform>%1 · %n message</numerusform>
            <numerusform>%1 · %n messages</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message numerus="yes">
        <source>Generating… %Ln token(s)</source>
        <translation>
            <numerusform>Generating… %Ln token</numerusform>
            <numerusform>Generating… %Ln tokens</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>MessageFitLabel</name>
    <message numerus="yes">
        <source>%Ln token(s)</source>
        <translation>
            <numerusform>%Ln token</numerusform>
            <numerusform>%Ln tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%1 · sending it leaves the oldest %n message(s) out of the model&apos;s context</source>
        <translation>
            <numerusform>%1 · sending it leaves the oldest message out of the model&apos;s context</numerusform>
            <numerusform>%1 · sending it leaves the oldest %n messages out of the model&apos;s context</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ModelInfoPanel</name>
    <message numerus="yes">
        <source>KV room for the chat and %n more conversation(s) that the API server&apos;s replies share</source>
        <translation>
            <numerusform>KV room for the chat and %n more conversation that the API server&apos;s replies share</numerusform>
            <numerusform>KV room for the chat and %n more conversations that the API server&apos;s replies share</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n model(s) served</source>
        <translation>
            <numerusform>%n model served</numerusform>
            <numerusform>%n models served</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ModelsDialog</name>
    <message numerus="yes">
        <source>%n repositories found.</source>
        <translation>
            <numerusform>%n repository found.</numerusform>
            <numerusform>%n repositories found.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source> (%n parts)</source>
        <translation>
            <numerusform> (%n part)</numerusform>
            <numerusform> (%n parts)</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>RemoteChat</name>
    <message numerus="yes">
        <source>%1 Lantern kept the %n token(s) that came.</source>
        <translation>
            <numerusform>%1 Lantern kept the %n token that came.</numerusform>
            <numerusform>%1 Lantern kept the %n tokens that came.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>RemoteEnginesDialog</name>
    <message numerus="yes">
        <source>Connected: %1 serves %n model(s) (%2), answering in %3.</source>
        <translation>
            <numerusform>Connected: %1 serves %n model (%2), answering in %3.</numerusform>
            <numerusform>Connected: %1 serves %n models (%2), answering in %3.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ReplyDetails</name>
    <message numerus="yes">
        <source>%Ln token(s)</source>
        <translation>
            <numerusform>%Ln token</numerusform>
            <numerusform>%Ln tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%Ln written beside API replies</source>
        <translation>
            <numerusform>%Ln written beside API replies</numerusform>
            <numerusform>%Ln written beside API replies</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>StepProfilePanel</name>
    <message numerus="yes">
        <source>%1 of %2 in all, %n dispatch(es)%3</source>
        <translation>
            <numerusform>%1 of %2 in all, %n dispatch%3</numerusform>
            <numerusform>%1 of %2 in all, %n dispatches%3</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>TurnController</name>
    <message numerus="yes">
        <source>%n earlier turn(s) were dropped to make room in the context.</source>
        <translation>
            <numerusform>%n earlier turn was dropped to make room in the context.</numerusform>
            <numerusform>%n earlier turns were dropped to make room in the context.</numerusform>
        </translation>
    </message>
</context>
</TS>
