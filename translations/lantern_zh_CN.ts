<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>ApiServerControl</name>
    <message>
        <source>Local &amp;API Server</source>
        <translation>本地 &amp;API 服务器</translation>
    </message>
    <message>
        <source>API Server &amp;Port…</source>
        <translation>API 服务器端口(&amp;P)…</translation>
    </message>
    <message>
        <source>API Replies &amp;Wait for the Chat</source>
        <translation>API 回复等待聊天(&amp;W)</translation>
    </message>
    <message>
        <source>API replies pause while the chat writes a reply and go on when it ends, so the chat&apos;s reply comes at full speed. Off, they are written in the same steps as the chat&apos;s reply (on a CPU device the chat&apos;s reply then slows while they run).</source>
        <translation>聊天生成回复时 API 的回复暂停，聊天回复结束后再从原处继续，这样聊天的回复保持全速。关闭时，API 的回复与聊天的回复在同一步中生成（在 CPU 设备上，聊天的回复会因此变慢）。</translation>
    </message>
    <message>
        <source>The API server stopped: %1</source>
        <translation>API 服务器已停止：%1</translation>
    </message>
    <message>
        <source>Lets editors, scripts and other apps on this computer use the loaded model through an OpenAI-compatible API (http://127.0.0.1:%1/v1).</source>
        <translation>让本机上的编辑器、脚本和其他应用通过兼容 OpenAI 的 API（http://127.0.0.1:%1/v1）使用已加载的模型。</translation>
    </message>
    <message>
        <source>The API server starts when a model is loaded.</source>
        <translation>加载模型后 API 服务器即会启动。</translation>
    </message>
    <message>
        <source>API Server Port</source>
        <translation>API 服务器端口</translation>
    </message>
    <message>
        <source>Port on 127.0.0.1 (this computer only):</source>
        <translation>127.0.0.1 上的端口（仅限本机）：</translation>
    </message>
    <message>
        <source>API %1</source>
        <translation>API %1</translation>
    </message>
    <message numerus="yes">
        <source>API %1 · %n repl(ies) paused for the chat</source>
        <translation>
            <numerusform>API %1 · %n 个回复为聊天暂停</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>API %1 · writing %n repl(ies)</source>
        <translation>
            <numerusform>API %1 · 正在写 %n 条回复</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n waiting</source>
        <translation>
            <numerusform>%n 个等待中</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>OpenAI-compatible API at %1 — %n repl(ies) served. API replies pause while the chat writes a reply (File &gt; API Replies Wait for the Chat), and share one conversation&apos;s room in the KV cache: past it, the reply that started last waits and then goes on where it was.</source>
        <translation>
            <numerusform>兼容 OpenAI 的 API 位于 %1 — 已回复 %n 次。聊天生成回复时 API 的回复暂停（文件 &gt; API 回复等待聊天），并共用 KV 缓存中一个对话的空间：超出时最后开始的回复先等待，之后从原处继续。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>OpenAI-compatible API at %1 — %n repl(ies) served. API replies are written in the same steps as the chat&apos;s reply, and share one conversation&apos;s room in the KV cache: past it, the reply that started last waits and then goes on where it was.</source>
        <translation>
            <numerusform>兼容 OpenAI 的 API 位于 %1 — 已回复 %n 次。API 的回复与聊天的回复在同一步中生成，并共用 KV 缓存中一个对话的空间：超出时最后开始的回复先等待，之后从原处继续。</numerusform>
        </translation>
    </message>
    <message>
        <source>API Server &amp;Key…</source>
        <translation>API 服务器密钥(&amp;K)…</translation>
    </message>
    <message>
        <source>A key the API&apos;s clients must send (Authorization: Bearer &lt;key&gt;), so that other programs on this computer cannot use the model without it</source>
        <translation>API 客户端必须发送的密钥（Authorization: Bearer &lt;密钥&gt;），使本机上的其他程序没有它就无法使用模型</translation>
    </message>
    <message>
        <source>API Server Key</source>
        <translation>API 服务器密钥</translation>
    </message>
    <message>
        <source>Clients must send &quot;Authorization: Bearer &lt;key&gt;&quot;. Leave it empty for no key:</source>
        <translation>客户端必须发送“Authorization: Bearer &lt;密钥&gt;”。留空表示不需要密钥：</translation>
    </message>
</context>
<context>
    <name>AppMenus</name>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;About Lantern</source>
        <translation>关于 Lantern(&amp;A)</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Open Model…</source>
        <translation>打开模型(&amp;O)…</translation>
    </message>
    <message>
        <source>Open Model</source>
        <translation>打开模型</translation>
    </message>
    <message>
        <source>GGUF models (*.gguf);;All files (*)</source>
        <translation>GGUF 模型 (*.gguf);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Open Models &amp;Folder</source>
        <translation>打开模型文件夹(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Export Conversation…</source>
        <translation>导出对话(&amp;E)…</translation>
    </message>
    <message>
        <source>&amp;New Chat</source>
        <translation>新对话(&amp;N)</translation>
    </message>
    <message>
        <source>When the Context Is Full, Drop the Oldest Turns</source>
        <translation>上下文已满时，丢弃最早的对话轮次</translation>
    </message>
    <message>
        <source>Otherwise the reply stops and you are told the context is full.</source>
        <translation>否则回复会停止，并提示上下文已满。</translation>
    </message>
    <message>
        <source>Let the Model &amp;Think Before Answering</source>
        <translation>让模型先思考再回答(&amp;T)</translation>
    </message>
    <message>
        <source>For models that can reason first (Qwen3): on, the reply starts with its reasoning, shown apart; off, the model is told to answer at once.</source>
        <translation>适用于能先推理的模型（Qwen3）：打开时，回复以推理开头并单独显示；关闭时，模型被要求直接回答。</translation>
    </message>
    <message>
        <source>Context &amp;Length…</source>
        <translation>上下文长度(&amp;L)…</translation>
    </message>
    <message>
        <source>How many tokens of the conversation the model sees at once, and the memory that takes</source>
        <translation>模型一次能看到的对话词元数，以及它占用的内存</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>Show Replies as &amp;Markdown</source>
        <translation>以 Markdown 显示回复(&amp;M)</translation>
    </message>
    <message>
        <source>Otherwise replies show the raw text the model wrote.</source>
        <translation>否则回复显示模型写出的原始文本。</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>Automatic (System)</source>
        <translation>自动（跟随系统）</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Conversation</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>Export Conversation</source>
        <translation>导出对话</translation>
    </message>
    <message>
        <source>Markdown (*.md);;All files (*)</source>
        <translation>Markdown (*.md);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <source>Exported to %1</source>
        <translation>已导出到 %1</translation>
    </message>
    <message>
        <source>About Lantern</source>
        <translation>关于 Lantern</translation>
    </message>
    <message>
        <source>&lt;h3&gt;Lantern %1&lt;/h3&gt;&lt;p&gt;Chat with Llama models on your own computer, on its own Vulkan inference engine — and see what happens inside: the KV cache, attention, sampling and honest speed figures.&lt;/p&gt;</source>
        <translation>&lt;h3&gt;Lantern %1&lt;/h3&gt;&lt;p&gt;在你自己的电脑上，用 Lantern 自带的 Vulkan 推理引擎与 Llama 模型聊天——并看清其中发生的一切：KV 缓存、注意力、采样，以及真实的速度数据。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>&amp;Get Models…</source>
        <translation>获取模型(&amp;G)…</translation>
    </message>
    <message>
        <source>Find and download GGUF models from the Hugging Face Hub</source>
        <translation>从 Hugging Face Hub 查找并下载 GGUF 模型</translation>
    </message>
    <message>
        <source>&amp;Remote Engines…</source>
        <translation>远程引擎(&amp;R)…</translation>
    </message>
    <message>
        <source>Chat with a model on another machine: lantern-server, vLLM, llama-server, Ollama or any OpenAI-compatible server</source>
        <translation>与另一台机器上的模型聊天：lantern-server、vLLM、llama-server、Ollama 或任何兼容 OpenAI 的服务器</translation>
    </message>
</context>
<context>
    <name>AppStatusBar</name>
    <message>
        <source>%1
Driver: %2</source>
        <translation>%1
驱动：%2</translation>
    </message>
    <message>
        <source>No device</source>
        <translation>无设备</translation>
    </message>
    <message>
        <source>Context %1 / %2</source>
        <translation>上下文 %1 / %2</translation>
    </message>
    <message>
        <source>Remote: %1 (%2)</source>
        <translation>远程：%1（%2）</translation>
    </message>
</context>
<context>
    <name>AttentionHeatmap</name>
    <message>
        <source>Turn capture on and generate a reply to see where each head of the chosen layer looks.</source>
        <translation>打开“捕获”并生成回复，即可看到所选层的每个注意力头关注的位置。</translation>
    </message>
    <message>
        <source>Head %1 → position %2: %3%</source>
        <translation>注意力头 %1 → 位置 %2：%3%</translation>
    </message>
    <message>
        <source>%1 “%2”</source>
        <translation>%1“%2”</translation>
    </message>
</context>
<context>
    <name>AttentionPanel</name>
    <message>
        <source>Capture</source>
        <translation>捕获</translation>
    </message>
    <message>
        <source>Read back the attention weights of the newest token (costs a little speed).</source>
        <translation>读回最新词元的注意力权重（会稍微降低速度）。</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>注意力头</translation>
    </message>
    <message>
        <source>All heads</source>
        <translation>所有注意力头</translation>
    </message>
    <message>
        <source>Head %1</source>
        <translation>注意力头 %1</translation>
    </message>
    <message>
        <source>Last layer by default; weights are normalised per head.</source>
        <translation>默认显示最后一层；权重按每个注意力头归一化。</translation>
    </message>
    <message>
        <source>No model loaded.</source>
        <translation>未加载模型。</translation>
    </message>
    <message>
        <source> of %1</source>
        <translation>（共 %1 层）</translation>
    </message>
    <message>
        <source>Layer %1 of %2, token at position %3 attending over %4 positions</source>
        <translation>第 %1 层（共 %2 层）：位置 %3 的词元关注 %4 个位置</translation>
    </message>
</context>
<context>
    <name>AttentionWords</name>
    <message>
        <source>Turn capture on and send a message: the conversation&apos;s tokens appear here. Point at a token of a reply to see what it attended to.</source>
        <translation>打开“捕获”并发送消息：对话的词元会显示在这里。把指针移到回复中的某个词元上，即可看到它关注了什么。</translation>
    </message>
    <message numerus="yes">
        <source>Capture keeps %1 a token (%2 heads × %3 positions, one byte each); %n token(s) kept, at most %4.</source>
        <translation>
            <numerusform>捕获每个词元占用 %1（%2 个注意力头 × %3 个位置，每项一个字节）；已保留 %n 个词元，最多 %4。</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>CandidateBars</name>
    <message>
        <source>Candidates appear while a reply is generated.</source>
        <translation>生成回复时会在此显示候选词元。</translation>
    </message>
</context>
<context>
    <name>ChatTemplateDialog</name>
    <message>
        <source>Chat template</source>
        <translation>聊天模板</translation>
    </message>
    <message>
        <source>Lantern renders the model&apos;s own template with its Jinja engine, as Hugging Face does. Text you type never becomes a control token.</source>
        <translation>Lantern 用自带的 Jinja 引擎渲染模型自己的模板，与 Hugging Face 的做法一致。你输入的文字绝不会变成控制词元。</translation>
    </message>
    <message>
        <source>Lantern writes the prompts with its built-in %1 format: the model&apos;s template could not be used (%2).</source>
        <translation>Lantern 使用内置的 %1 格式编写提示：无法使用模型的模板（%2）。</translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <source>Copy Message</source>
        <translation>复制消息</translation>
    </message>
    <message>
        <source>Copy Conversation</source>
        <translation>复制整个对话</translation>
    </message>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <source>Edit and Resend…</source>
        <translation>编辑并重新发送…</translation>
    </message>
    <message>
        <source>Welcome to Lantern</source>
        <translation>欢迎使用 Lantern</translation>
    </message>
    <message>
        <source>Open a GGUF model (File &gt; Open Model…) or pick one from the toolbar. Models in %1, and those LM Studio, GPT4All, Jan, llama.cpp, the Hugging Face cache or Ollama downloaded, are listed automatically.</source>
        <translation>打开一个 GGUF 模型（文件 &gt; 打开模型…），或从工具栏中选择。%1 中的模型，以及 LM Studio、GPT4All、Jan、llama.cpp、Hugging Face 缓存或 Ollama 下载的模型，会自动列出。</translation>
    </message>
    <message>
        <source>Loading the model…</source>
        <translation>正在加载模型…</translation>
    </message>
    <message>
        <source>Weights are uploaded to the device and the compute pipelines are built.</source>
        <translation>正在把权重上传到设备并构建计算管线。</translation>
    </message>
    <message>
        <source>Ready when you are</source>
        <translation>一切就绪</translation>
    </message>
    <message>
        <source>%1 is loaded. Write a message below to start.</source>
        <translation>%1 已加载。在下方输入消息即可开始。</translation>
    </message>
    <message>
        <source>The previous version</source>
        <translation>上一个版本</translation>
    </message>
    <message>
        <source>The next version</source>
        <translation>下一个版本</translation>
    </message>
    <message>
        <source>Put this message back in the input; sending it makes a new version of it, and the earlier one stays</source>
        <translation>把这条消息放回输入框；发送后会生成它的新版本，原来的版本仍会保留</translation>
    </message>
</context>
<context>
    <name>ContextLengthDialog</name>
    <message>
        <source>Context Length</source>
        <translation>上下文长度</translation>
    </message>
    <message>
        <source>This model</source>
        <translation>此模型</translation>
    </message>
    <message>
        <source>How many tokens of the conversation the model sees at once. A longer context remembers more of it and takes more memory; %1 was trained on %2 tokens, the most it is offered.</source>
        <translation>模型一次能看到的对话词元数。上下文越长，记住的内容越多，占用的内存也越多；%1 训练时的上下文为 %2 个词元，这也是可选的上限。</translation>
    </message>
    <message>
        <source>Automatic: %1 tokens (the model&apos;s own, at most %2)</source>
        <translation>自动：%1 个词元（模型自身的长度，最多 %2）</translation>
    </message>
    <message>
        <source> tokens</source>
        <translation> 个词元</translation>
    </message>
    <message>
        <source>Length</source>
        <translation>长度</translation>
    </message>
    <message>
        <source>Reload the Model</source>
        <translation>重新加载模型</translation>
    </message>
    <message>
        <source>With the weights, about %1 of the %3 on %2.</source>
        <translation>加上权重，约占 %2 上 %3 中的 %1。</translation>
    </message>
    <message>
        <source>With the weights, about %1.</source>
        <translation>加上权重，约 %1。</translation>
    </message>
    <message>
        <source>Too long for %1: one layer&apos;s KV cache would take %2, and one buffer on it reaches %3. Choose a shorter context.</source>
        <translation>对 %1 来说太长：一层的 KV 缓存将占 %2，而它的单个缓冲区最多只能访问 %3。请选择更短的上下文。</translation>
    </message>
    <message>
        <source>Too much for %1: about %2 are needed and it has %3. Choose a shorter context.</source>
        <translation>超出 %1 的容量：约需 %2，而它只有 %3。请选择更短的上下文。</translation>
    </message>
    <message>
        <source>This conversation is already %1 tokens long: with %2, its oldest turns no longer fit (File &gt; When the Context Is Full decides what happens next).</source>
        <translation>此对话已有 %1 个词元：上下文为 %2 时，最早的轮次将放不下（接下来如何处理由“文件 &gt; 上下文已满时，丢弃最早的对话轮次”决定）。</translation>
    </message>
    <message>
        <source>KV cache: %1 for the chat&apos;s %2 tokens (switching the local API server on adds room for its replies).</source>
        <translation>KV 缓存：%1，供聊天的 %2 个词元使用（开启本地 API 服务器会为它的回复再留出空间）。</translation>
    </message>
    <message numerus="yes">
        <source>KV cache: %1, room for %n conversation(s) of %2 tokens at once: the chat&apos;s, and what the local API server&apos;s replies share.</source>
        <translation>
            <numerusform>KV 缓存：%1，可同时容纳 %n 个 %2 词元的对话：聊天本身的，以及本地 API 服务器的回复共用的。</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ConversationList</name>
    <message>
        <source>New Chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <source>Search conversations</source>
        <translation>搜索对话</translation>
    </message>
    <message>
        <source>Rename…</source>
        <translation>重命名…</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message numerus="yes">
        <source>%1 · %n message(s)</source>
        <translation>
            <numerusform>%1 · %n 条消息</numerusform>
        </translation>
    </message>
    <message>
        <source>%1
Model: %2</source>
        <translation>%1
模型：%2</translation>
    </message>
    <message>
        <source>Delete conversation</source>
        <translation>删除对话</translation>
    </message>
    <message>
        <source>Delete “%1” and all its messages?</source>
        <translation>删除“%1”及其所有消息吗？</translation>
    </message>
    <message>
        <source>Rename conversation</source>
        <translation>重命名对话</translation>
    </message>
    <message>
        <source>Title:</source>
        <translation>标题：</translation>
    </message>
</context>
<context>
    <name>Device</name>
    <message>
        <source>discrete GPU</source>
        <translation>独立显卡</translation>
    </message>
    <message>
        <source>integrated GPU</source>
        <translation>集成显卡</translation>
    </message>
    <message>
        <source>virtual GPU</source>
        <translation>虚拟显卡</translation>
    </message>
    <message>
        <source>CPU (software Vulkan)</source>
        <translation>CPU（软件 Vulkan）</translation>
    </message>
    <message>
        <source>other device</source>
        <translation>其他设备</translation>
    </message>
    <message>
        <source>%1 — %2</source>
        <translation>%1 — %2</translation>
    </message>
</context>
<context>
    <name>DeviceMenu</name>
    <message>
        <source>&amp;Device</source>
        <translation>设备(&amp;D)</translation>
    </message>
    <message>
        <source>Automatic (best available)</source>
        <translation>自动（最佳可用设备）</translation>
    </message>
    <message>
        <source>the automatically chosen device</source>
        <translation>自动选择的设备</translation>
    </message>
</context>
<context>
    <name>Export</name>
    <message>
        <source>Conversation</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>Exported from Lantern on %1</source>
        <translation>由 Lantern 导出于 %1</translation>
    </message>
    <message>
        <source>model file %1</source>
        <translation>模型文件 %1</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <source>Reasoning</source>
        <translation>思考过程</translation>
    </message>
    <message>
        <source>interrupted</source>
        <translation>已中断</translation>
    </message>
</context>
<context>
    <name>Format</name>
    <message>
        <source>%1 B</source>
        <translation>%1 字节</translation>
    </message>
    <message>
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
    <message>
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <source>%1 tok/s</source>
        <translation>%1 词元/秒</translation>
    </message>
    <message>
        <source>end of text</source>
        <translation>文本结束</translation>
    </message>
    <message>
        <source>stop string</source>
        <translation>停止字符串</translation>
    </message>
    <message>
        <source>token limit</source>
        <translation>词元上限</translation>
    </message>
    <message>
        <source>you</source>
        <translation>你</translation>
    </message>
    <message>
        <source>full context</source>
        <translation>上下文已满</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
</context>
<context>
    <name>InferenceWorker</name>
    <message>
        <source>The computer ran out of memory.</source>
        <translation>计算机内存不足。</translation>
    </message>
    <message>
        <source>Unexpected internal error: %1</source>
        <translation>意外的内部错误：%1</translation>
    </message>
    <message>
        <source>Could not start a new conversation</source>
        <translation>无法开始新对话</translation>
    </message>
    <message>
        <source>Could not list the Vulkan devices: %1</source>
        <translation>无法列出 Vulkan 设备：%1</translation>
    </message>
    <message>
        <source>No model is loaded. Open a model first (File &gt; Open Model…).</source>
        <translation>尚未加载模型。请先打开一个模型（文件 &gt; 打开模型…）。</translation>
    </message>
    <message>
        <source>Generation failed</source>
        <translation>生成失败</translation>
    </message>
    <message>
        <source>%1: %2</source>
        <translation>%1：%2</translation>
    </message>
    <message>
        <source>Preparing the model&apos;s kernels</source>
        <translation>准备模型的计算内核</translation>
    </message>
    <message>
        <source>there is no room on the device for its replies beside the chat (%1)</source>
        <translation>设备上没有足够空间在聊天之外再容纳它的回复（%1）</translation>
    </message>
</context>
<context>
    <name>KvBlockGrid</name>
    <message>
        <source>cached for prefix reuse</source>
        <translation>已缓存，可供前缀复用</translation>
    </message>
    <message>
        <source>empty</source>
        <translation>空闲</translation>
    </message>
    <message>
        <source>Block %1: %2
%3 of %4 tokens written</source>
        <translation>块 %1：%2
已写入 %3 / %4 个词元</translation>
    </message>
    <message>
        <source>positions %1–%2</source>
        <translation>位置 %1–%2</translation>
    </message>
    <message>
        <source>registered in the prefix cache</source>
        <translation>已登记到前缀缓存</translation>
    </message>
    <message>
        <source>in use by %1</source>
        <translation>正被 %1 使用</translation>
    </message>
</context>
<context>
    <name>KvCachePanel</name>
    <message>
        <source>Used</source>
        <translation>已用</translation>
    </message>
    <message>
        <source>Cached</source>
        <translation>已缓存</translation>
    </message>
    <message>
        <source>Empty</source>
        <translation>空闲</translation>
    </message>
    <message>
        <source>Total</source>
        <translation>总计</translation>
    </message>
    <message>
        <source>Peak used</source>
        <translation>使用峰值</translation>
    </message>
    <message>
        <source>Evictions</source>
        <translation>驱逐次数</translation>
    </message>
    <message>
        <source>Capacity</source>
        <translation>容量</translation>
    </message>
    <message>
        <source>Per token</source>
        <translation>每词元</translation>
    </message>
    <message>
        <source>Prefix hit (last)</source>
        <translation>前缀命中（上次）</translation>
    </message>
    <message>
        <source>Prefix hit (all)</source>
        <translation>前缀命中（累计）</translation>
    </message>
    <message>
        <source>No model loaded.</source>
        <translation>未加载模型。</translation>
    </message>
    <message>
        <source>%1 × %2 tokens</source>
        <translation>%1 × %2 个词元</translation>
    </message>
    <message>
        <source>%1 tokens · %2</source>
        <translation>%1 个词元 · %2</translation>
    </message>
    <message>
        <source>%1 = 2 (K,V) × %2 layers × %3 KV heads × %4 dims × %5 B</source>
        <translation>%1 = 2（K、V）× %2 层 × %3 个 KV 头 × %4 维 × %5 字节</translation>
    </message>
    <message>
        <source>%1 of %2 tokens</source>
        <translation>%2 个词元中命中 %1 个</translation>
    </message>
    <message>
        <source>%1 of %2 tokens (%3)</source>
        <translation>%2 个词元中命中 %1 个（%3）</translation>
    </message>
    <message>
        <source>this chat</source>
        <translation>当前对话</translation>
    </message>
    <message>
        <source>sequence %1</source>
        <translation>序列 %1</translation>
    </message>
    <message>
        <source>%1: %2 tokens in %3 blocks</source>
        <translation>%1：%2 个词元，占 %3 个块</translation>
    </message>
    <message>
        <source>cached</source>
        <translation>已缓存</translation>
    </message>
    <message>
        <source>empty</source>
        <translation>空闲</translation>
    </message>
    <message>
        <source>API reply (sequence %1)</source>
        <translation>API 回复（序列 %1）</translation>
    </message>
    <message>
        <source>Local layers</source>
        <translation>局部层</translation>
    </message>
    <message>
        <source>none: every layer keeps every position</source>
        <translation>无：每一层都保留全部位置</translation>
    </message>
    <message>
        <source>%1 of %2 layers keep only their last %3 tokens: %4 of their %5 blocks in use (%6)</source>
        <translation>%2 层中有 %1 层只保留最近 %3 个词元：其专用 %5 个块中已用 %4 个（%6）</translation>
    </message>
    <message>
        <source>Last turn</source>
        <translation>上一轮</translation>
    </message>
    <message>
        <source>%1 of its %2 prompt tokens came from the cache</source>
        <translation>其 %2 个提示词元中有 %1 个来自缓存</translation>
    </message>
    <message>
        <source>the chat template wrote the earlier conversation differently this time (it leaves out earlier reasoning, or rewrites replies), so only the first %1 tokens could be kept</source>
        <translation>聊天模板这次以不同方式写出了之前的对话（省略了之前的推理，或改写了回复），因此只能保留前 %1 个词元</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>Lantern</source>
        <translation>Lantern</translation>
    </message>
    <message>
        <source>Conversations unavailable</source>
        <translation>对话记录不可用</translation>
    </message>
    <message>
        <source>The conversation database could not be opened, so chats will not be saved.

%1</source>
        <translation>无法打开对话数据库，聊天内容将不会被保存。

%1</translation>
    </message>
    <message>
        <source>Conversations</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>Sampling settings not applied: %1</source>
        <translation>采样设置未生效：%1</translation>
    </message>
    <message>
        <source>No model</source>
        <translation>无模型</translation>
    </message>
    <message>
        <source>Loading %1…</source>
        <translation>正在加载 %1…</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <source>Generating…</source>
        <translation>正在生成…</translation>
    </message>
    <message>
        <source>%1 — Lantern</source>
        <translation>%1 — Lantern</translation>
    </message>
    <message>
        <source>Loaded %1 on %2 in %3</source>
        <translation>已在 %2 上加载 %1，用时 %3</translation>
    </message>
    <message>
        <source>%1 has no chat template: it continues your text (completion mode).</source>
        <translation>%1 没有聊天模板：它会续写你的文字（补全模式）。</translation>
    </message>
    <message>
        <source>Could not load the model.</source>
        <translation>无法加载模型。</translation>
    </message>
    <message>
        <source>Stopping…</source>
        <translation>正在停止…</translation>
    </message>
    <message numerus="yes">
        <source>Generating… %Ln token(s)</source>
        <translation>
            <numerusform>正在生成… %Ln 个词元</numerusform>
        </translation>
    </message>
    <message>
        <source>Generation failed</source>
        <translation>生成失败</translation>
    </message>
    <message>
        <source>Reading the prompt… %1 of %2 tokens</source>
        <translation>正在读取提示词… 已完成 %1 / %2 个词元</translation>
    </message>
    <message>
        <source>Loading the model again with room in its KV cache for the API server&apos;s replies…</source>
        <translation>正在重新加载模型，并在 KV 缓存中为 API 服务器的回复留出空间…</translation>
    </message>
    <message>
        <source>Downloaded %1: it is in the model picker</source>
        <translation>已下载 %1：它已出现在模型选择器中</translation>
    </message>
    <message>
        <source>The remote server sets its own context length.</source>
        <translation>远程服务器自行设定上下文长度。</translation>
    </message>
    <message>
        <source>Could not connect to %1.</source>
        <translation>无法连接到 %1。</translation>
    </message>
    <message>
        <source>Could not connect</source>
        <translation>无法连接</translation>
    </message>
    <message>
        <source>Lantern could not chat on %1 (%2).

%3</source>
        <translation>Lantern 无法在 %1（%2）上聊天。

%3</translation>
    </message>
    <message>
        <source>Connected to %1 on %2 in %3</source>
        <translation>已连接到 %2 上的 %1，用时 %3</translation>
    </message>
    <message>
        <source>%1 on %2</source>
        <translation>%2 上的 %1</translation>
    </message>
    <message>
        <source>Connecting to %1…</source>
        <translation>正在连接 %1…</translation>
    </message>
</context>
<context>
    <name>MessageComposer</name>
    <message>
        <source>Write a message… (Enter sends, Shift+Enter starts a new line)</source>
        <translation>输入消息…（Enter 发送，Shift+Enter 换行）</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Stop generating (Esc). The text so far is kept.</source>
        <translation>停止生成（Esc）。已生成的文字会保留。</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <source>Replace the last reply with a new one</source>
        <translation>用新的回复替换上一条回复</translation>
    </message>
    <message>
        <source>Continue</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Write more of the last reply, from where it stopped</source>
        <translation>从上一条回复停下的地方接着写</translation>
    </message>
    <message>
        <source>There is no room left in the context to continue this reply</source>
        <translation>上下文已没有空间继续这条回复</translation>
    </message>
</context>
<context>
    <name>MessageDelegate</name>
    <message>
        <source>interrupted</source>
        <translation>已中断</translation>
    </message>
    <message>
        <source>Reasoning</source>
        <translation>思考过程</translation>
    </message>
    <message>
        <source>Reasoning…</source>
        <translation>思考中…</translation>
    </message>
    <message>
        <source>no longer in the model&apos;s context</source>
        <translation>已不在模型的上下文中</translation>
    </message>
</context>
<context>
    <name>MessageFitLabel</name>
    <message numerus="yes">
        <source>%Ln token(s)</source>
        <translation>
            <numerusform>%Ln 个词元</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%1 · sending it leaves the oldest %n message(s) out of the model&apos;s context</source>
        <translation>
            <numerusform>%1 · 发送后，最早的 %n 条消息将移出模型的上下文</numerusform>
        </translation>
    </message>
    <message>
        <source>%1 · no room: the conversation would be %2 tokens, the context holds %3. Turn on File &gt; When the Context Is Full, Drop the Oldest Turns, or start a new chat.</source>
        <translation>%1 · 空间不足：对话将达 %2 个词元，而上下文只能容纳 %3 个。请打开“文件 &gt; 上下文已满时，丢弃最早的对话轮次”，或开始新对话。</translation>
    </message>
    <message>
        <source>%1 · too long: the conversation would be %2 tokens, the context holds %3 and a reply needs room too.</source>
        <translation>%1 · 太长：对话将达 %2 个词元，而上下文只能容纳 %3 个，回复也需要空间。</translation>
    </message>
</context>
<context>
    <name>ModelDialogs</name>
    <message>
        <source>Could not change the context length</source>
        <translation>无法更改上下文长度</translation>
    </message>
    <message>
        <source>Could not change the device</source>
        <translation>无法更换设备</translation>
    </message>
    <message>
        <source>Lantern could not load %1 with a context of %2 tokens; it is loaded again as before.</source>
        <translation>Lantern 无法以 %2 个词元的上下文加载 %1；已按原来的设置重新加载。</translation>
    </message>
    <message>
        <source>Lantern could not load %1 on %2; it is loaded again on the device it ran on.</source>
        <translation>Lantern 无法在 %2 上加载 %1；已在原来运行的设备上重新加载。</translation>
    </message>
    <message>
        <source>Could not load the model</source>
        <translation>无法加载模型</translation>
    </message>
    <message>
        <source>Lantern could not load %1.</source>
        <translation>Lantern 无法加载 %1。</translation>
    </message>
</context>
<context>
    <name>ModelInfoPanel</name>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>Architecture</source>
        <translation>架构</translation>
    </message>
    <message>
        <source>Parameters</source>
        <translation>参数量</translation>
    </message>
    <message>
        <source>Weights</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <source>Layers</source>
        <translation>层数</translation>
    </message>
    <message>
        <source>Embedding / FFN</source>
        <translation>嵌入 / FFN</translation>
    </message>
    <message>
        <source>Heads / KV heads</source>
        <translation>注意力头 / KV 头</translation>
    </message>
    <message>
        <source>Head dim / RoPE</source>
        <translation>头维度 / RoPE</translation>
    </message>
    <message>
        <source>Context</source>
        <translation>上下文</translation>
    </message>
    <message>
        <source>Vocabulary</source>
        <translation>词表</translation>
    </message>
    <message>
        <source>Chat template</source>
        <translation>聊天模板</translation>
    </message>
    <message>
        <source>Device</source>
        <translation>设备</translation>
    </message>
    <message>
        <source>Driver</source>
        <translation>驱动</translation>
    </message>
    <message>
        <source>Device memory</source>
        <translation>设备内存</translation>
    </message>
    <message>
        <source>Subgroup size</source>
        <translation>子组大小</translation>
    </message>
    <message>
        <source>%1 file, %2 on the device</source>
        <translation>文件 %1，设备上 %2</translation>
    </message>
    <message>
        <source>%1 / %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <source>%1 / %2 dims, base %3</source>
        <translation>%1 / %2 维，基数 %3</translation>
    </message>
    <message>
        <source>, positions ÷ %1 (linear scaling)</source>
        <translation>，位置 ÷ %1（线性缩放）</translation>
    </message>
    <message>
        <source>, YaRN ×%1 over %2 tokens</source>
        <translation>，YaRN ×%1（原上下文 %2 个词元）</translation>
    </message>
    <message>
        <source>, frequency factors per pair (Llama 3.1 scaling)</source>
        <translation>，逐对频率因子（Llama 3.1 缩放）</translation>
    </message>
    <message>
        <source>%1 tokens (trained: %2)</source>
        <translation>%1 个词元（训练时：%2）</translation>
    </message>
    <message>
        <source>%1 tokens%2</source>
        <translation>%1 个词元%2</translation>
    </message>
    <message>
        <source>, output tied to embeddings</source>
        <translation>，输出层与嵌入层共享权重</translation>
    </message>
    <message>
        <source>none — completion mode (your text is continued)</source>
        <translation>无 — 补全模式（续写你的文字）</translation>
    </message>
    <message>
        <source>KV room for the chat</source>
        <translation>KV 空间仅供聊天</translation>
    </message>
    <message numerus="yes">
        <source>KV room for the chat and %n more conversation(s) that the API server&apos;s replies share</source>
        <translation>
            <numerusform>KV 空间供聊天使用，另有 %n 个对话的空间由 API 服务器的回复共用</numerusform>
        </translation>
    </message>
    <message>
        <source>Attention</source>
        <translation>注意力</translation>
    </message>
    <message>
        <source>, local layers base %1</source>
        <translation>，局部层基数 %1</translation>
    </message>
    <message>
        <source>the whole context on every layer</source>
        <translation>每一层都看完整上下文</translation>
    </message>
    <message>
        <source>a window of %1 tokens on %2 of %3 layers (local), the whole context on the other %4</source>
        <translation>%3 层中有 %2 层使用 %1 个词元的滑动窗口（局部），其余 %4 层看完整上下文</translation>
    </message>
    <message>
        <source>, scores soft-capped at %1</source>
        <translation>，注意力分数软上限 %1</translation>
    </message>
    <message>
        <source>the model&apos;s own (Jinja)</source>
        <translation>模型自带（Jinja）</translation>
    </message>
    <message>
        <source>the model&apos;s own (Jinja; %1 family)</source>
        <translation>模型自带（Jinja；%1 系列）</translation>
    </message>
    <message>
        <source>built-in %1 format — the model&apos;s template could not be used</source>
        <translation>内置 %1 格式——无法使用模型的模板</translation>
    </message>
    <message>
        <source>none usable — completion mode (your text is continued)</source>
        <translation>无可用模板——续写模式（接着你的文字继续写）</translation>
    </message>
    <message>
        <source>show the template</source>
        <translation>查看模板</translation>
    </message>
    <message>
        <source>not said by the server</source>
        <translation>服务器未提供</translation>
    </message>
    <message>
        <source>%1 tokens</source>
        <translation>%1 个词元</translation>
    </message>
    <message>
        <source>the server&apos;s</source>
        <translation>服务器自带</translation>
    </message>
    <message>
        <source>Remote: %1 (%2)</source>
        <translation>远程：%1（%2）</translation>
    </message>
    <message numerus="yes">
        <source>%n model(s) served</source>
        <translation>
            <numerusform>提供 %n 个模型</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ModelPicker</name>
    <message>
        <source>Models in %1, those LM Studio, GPT4All, Jan, llama.cpp, the Hugging Face cache and Ollama downloaded, and models you opened</source>
        <translation>%1 中的模型、LM Studio、GPT4All、Jan、llama.cpp、Hugging Face 缓存和 Ollama 下载的模型，以及你打开过的模型</translation>
    </message>
    <message>
        <source>Choose a model…</source>
        <translation>选择模型…</translation>
    </message>
    <message>
        <source>No models found — use Open Model…</source>
        <translation>未找到模型 — 请使用“打开模型…”</translation>
    </message>
    <message>
        <source>Looking for models…</source>
        <translation>正在查找模型…</translation>
    </message>
    <message>
        <source>%1  (%2)</source>
        <translation>%1  （%2）</translation>
    </message>
    <message>
        <source>%1  (%2 · %3)</source>
        <translation>%1  （%2 · %3）</translation>
    </message>
    <message>
        <source>%1 — %2, not supported</source>
        <translation>%1 — %2，不支持</translation>
    </message>
    <message>
        <source>%1
Lantern runs llama, qwen2, qwen3, phi3, gemma2 and gemma3 models; this one is %2.</source>
        <translation>%1
Lantern 运行 llama、qwen2、qwen3、phi3、gemma2 与 gemma3 架构的模型；这个模型是 %2。</translation>
    </message>
</context>
<context>
    <name>ModelsDialog</name>
    <message>
        <source>Get Models</source>
        <translation>获取模型</translation>
    </message>
    <message>
        <source>The Hugging Face Hub, or a mirror of it (HF_ENDPOINT), e.g. https://hf-mirror.com</source>
        <translation>Hugging Face Hub 或其镜像（HF_ENDPOINT），例如 https://hf-mirror.com</translation>
    </message>
    <message>
        <source>Hub address</source>
        <translation>Hub 地址</translation>
    </message>
    <message>
        <source>Models folder</source>
        <translation>模型文件夹</translation>
    </message>
    <message>
        <source>Search GGUF models, e.g. qwen3 or gemma 3</source>
        <translation>搜索 GGUF 模型，例如 qwen3 或 gemma 3</translation>
    </message>
    <message>
        <source>Search</source>
        <translation>搜索</translation>
    </message>
    <message>
        <source>%1 — recommended</source>
        <translation>%1 — 推荐</translation>
    </message>
    <message>
        <source>Choose a repository to see its files.</source>
        <translation>选择一个仓库以查看其文件。</translation>
    </message>
    <message>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>Quantisation</source>
        <translation>量化</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <source>Lantern runs it</source>
        <translation>Lantern 能否运行</translation>
    </message>
    <message>
        <source>On this device</source>
        <translation>在本设备上</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Progress</source>
        <translation>进度</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Searching…</source>
        <translation>正在搜索…</translation>
    </message>
    <message>
        <source>%1 — %2 downloads%3</source>
        <translation>%1 — %2 次下载%3</translation>
    </message>
    <message>
        <source>, gated: needs a token</source>
        <translation>，受限：需要访问令牌</translation>
    </message>
    <message>
        <source>No GGUF models found.</source>
        <translation>未找到 GGUF 模型。</translation>
    </message>
    <message numerus="yes">
        <source>%n repositories found.</source>
        <translation>
            <numerusform>找到 %n 个仓库。</numerusform>
        </translation>
    </message>
    <message>
        <source>%1: reading its files…</source>
        <translation>%1：正在读取其文件…</translation>
    </message>
    <message>
        <source>%1 · licence: %2</source>
        <translation>%1 · 许可证：%2</translation>
    </message>
    <message>
        <source>not stated</source>
        <translation>未注明</translation>
    </message>
    <message numerus="yes">
        <source> (%n parts)</source>
        <translation>
            <numerusform>（%n 个部分）</numerusform>
        </translation>
    </message>
    <message>
        <source>checking…</source>
        <translation>正在检查…</translation>
    </message>
    <message>
        <source>unknown: %1</source>
        <translation>未知：%1</translation>
    </message>
    <message>
        <source>yes (%1)</source>
        <translation>能（%1）</translation>
    </message>
    <message>
        <source>no: not a model Lantern can read</source>
        <translation>不能：不是 Lantern 能读取的模型</translation>
    </message>
    <message>
        <source>no: a %1 model</source>
        <translation>不能：%1 模型</translation>
    </message>
    <message>
        <source>fits (%1 with a context of %2)</source>
        <translation>放得下（上下文 %2 时需 %1）</translation>
    </message>
    <message>
        <source>fits with a shorter context (%1 tokens)</source>
        <translation>缩短上下文后放得下（%1 个词元）</translation>
    </message>
    <message>
        <source>too big: needs %1 of %2</source>
        <translation>太大：需要 %1，设备只有 %2</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>Downloading into %1</source>
        <translation>正在下载到 %1</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>%1 of %2, %3/s, %4 left</source>
        <translation>%1 / %2，%3/s，剩余 %4</translation>
    </message>
    <message>
        <source>paused at %1 of %2</source>
        <translation>已暂停于 %1 / %2</translation>
    </message>
    <message>
        <source>done: in the model picker</source>
        <translation>完成：已在模型选择器中</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>hf_… (for gated and private models)</source>
        <translation>hf_…（用于受限和私有模型）</translation>
    </message>
    <message>
        <source>Access token</source>
        <translation>访问令牌</translation>
    </message>
    <message>
        <source>From HF_TOKEN.</source>
        <translation>来自 HF_TOKEN。</translation>
    </message>
    <message>
        <source>Kept in your keyring.</source>
        <translation>保存在你的密钥环中。</translation>
    </message>
    <message>
        <source>Kept in your keyring when you enter one.</source>
        <translation>输入后将保存在你的密钥环中。</translation>
    </message>
    <message>
        <source>No token.</source>
        <translation>没有令牌。</translation>
    </message>
    <message>
        <source>No keyring answered (%1): the token is kept for this session only.</source>
        <translation>没有可用的密钥环（%1）：令牌只在本次会话中保留。</translation>
    </message>
    <message>
        <source>Change…</source>
        <translation>更改…</translation>
    </message>
    <message>
        <source>Models Folder</source>
        <translation>模型文件夹</translation>
    </message>
</context>
<context>
    <name>OpBars</name>
    <message>
        <source>Each op family&apos;s time on the device in the timed step, with the bytes it read per second. &quot;Waiting&quot;: inside a fused layer, the share of the driver threads&apos; time in that op spent waiting for another thread&apos;s last piece of work.</source>
        <translation>被计时那一步中各类算子在设备上的耗时，以及它每秒读取的字节数。“等待”：在融合层内，驱动线程在该算子上等待其他线程完成最后一块工作所占的时间比例。</translation>
    </message>
</context>
<context>
    <name>PanelDocks</name>
    <message>
        <source>KV Cache</source>
        <translation>KV 缓存</translation>
    </message>
    <message>
        <source>Sampling</source>
        <translation>采样</translation>
    </message>
    <message>
        <source>Performance</source>
        <translation>性能</translation>
    </message>
    <message>
        <source>Attention</source>
        <translation>注意力</translation>
    </message>
    <message>
        <source>Step Profile</source>
        <translation>单步剖析</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Attention weights come from the local engine&apos;s own kernels: a remote server does not send them.</source>
        <translation>注意力权重来自本地引擎自身的计算内核：远程服务器不会发送它们。</translation>
    </message>
    <message>
        <source>A step profile times the local engine&apos;s own kernels: a remote server&apos;s steps cannot be timed from here.</source>
        <translation>单步剖析为本地引擎自身的计算内核计时：无法在这里为远程服务器的步骤计时。</translation>
    </message>
    <message>
        <source>prompt %1</source>
        <translation>提示处理 %1</translation>
    </message>
    <message>
        <source>generation %1</source>
        <translation>生成 %1</translation>
    </message>
    <message>
        <source>first token %1</source>
        <translation>首词元 %1</translation>
    </message>
    <message>
        <source>%1 prompt tokens computed</source>
        <translation>计算了 %1 个提示词元</translation>
    </message>
    <message>
        <source>token counts only (no timings sent)</source>
        <translation>仅有词元计数（未发送计时）</translation>
    </message>
    <message>
        <source>nothing (no usage or timings sent)</source>
        <translation>无（未发送用量或计时）</translation>
    </message>
</context>
<context>
    <name>PerformancePanel</name>
    <message>
        <source>Time to first token</source>
        <translation>首词元时间</translation>
    </message>
    <message>
        <source>Generated</source>
        <translation>已生成</translation>
    </message>
    <message>
        <source>Prefill</source>
        <translation>预填充</translation>
    </message>
    <message>
        <source>Decode</source>
        <translation>解码</translation>
    </message>
    <message>
        <source>Prompt tokens</source>
        <translation>提示词元</translation>
    </message>
    <message>
        <source>Reused / computed</source>
        <translation>复用 / 计算</translation>
    </message>
    <message>
        <source>Last step</source>
        <translation>最近一步</translation>
    </message>
    <message>
        <source>Blue: prompt tokens whose K/V came from the prefix cache. Amber: prompt tokens computed now.</source>
        <translation>蓝色：K/V 来自前缀缓存的提示词元。琥珀色：本次计算的提示词元。</translation>
    </message>
    <message>
        <source>Model load</source>
        <translation>模型加载</translation>
    </message>
    <message>
        <source>step latency</source>
        <translation>单步延迟</translation>
    </message>
    <message>
        <source>moving average</source>
        <translation>移动平均</translation>
    </message>
    <message>
        <source>token</source>
        <translation>词元</translation>
    </message>
    <message>
        <source>%1 (pipelines %2, cache %3)</source>
        <translation>%1（管线 %2，缓存%3）</translation>
    </message>
    <message>
        <source>warm</source>
        <translation>已预热</translation>
    </message>
    <message>
        <source>cold</source>
        <translation>未预热</translation>
    </message>
    <message>
        <source>generating…</source>
        <translation>生成中…</translation>
    </message>
    <message>
        <source>%1 (prefill step)</source>
        <translation>%1（预填充步骤）</translation>
    </message>
    <message>
        <source>%1 (live)</source>
        <translation>%1（实时）</translation>
    </message>
    <message>
        <source>%1 tokens</source>
        <translation>%1 个词元</translation>
    </message>
    <message>
        <source>%1 · %2</source>
        <translation>%1 · %2</translation>
    </message>
    <message>
        <source>%1 / %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <source>Ended by</source>
        <translation>结束原因</translation>
    </message>
    <message>
        <source>Kernel warm-up</source>
        <translation>内核预热</translation>
    </message>
    <message>
        <source>After loading, Lantern runs each kind of step once, so that no reply waits while the driver compiles a kernel for its first use (several seconds on a CPU driver the first time a model runs on this machine; later starts reuse the compiled code).</source>
        <translation>加载后，Lantern 会把每种计算步骤各运行一次，这样任何回复都不必等待驱动程序首次编译内核（模型第一次在这台机器上运行时，CPU 驱动需要几秒钟；之后启动会复用已编译的代码）。</translation>
    </message>
    <message>
        <source>running…</source>
        <translation>进行中…</translation>
    </message>
    <message>
        <source>Steady state</source>
        <translation>稳态</translation>
    </message>
    <message>
        <source>Slowdown</source>
        <translation>减速</translation>
    </message>
    <message>
        <source>How much slower the last quarter of the settled steps ran than the first quarter. Every new token attends to all earlier ones, so long replies slow down as they grow.</source>
        <translation>稳定后的各步中，最后四分之一比最前四分之一慢了多少。每个新词元都要关注之前的所有词元，所以回复越长越慢。</translation>
    </message>
    <message>
        <source>ms / step</source>
        <translation>毫秒/步</translation>
    </message>
    <message>
        <source>The decode rate once it has settled: the median step from the first 32 steps in a row that vary by less than 5 % (or by under 0.05 ms, the host&apos;s own timing noise) on. The first steps of a reply are often slower or uneven.</source>
        <translation>解码速度稳定后的速率：从第一段连续 32 步、波动小于 5 %（或小于 0.05 ms，即主机自身的计时噪声）的位置起，各步耗时的中位数。回复开头的几步往往更慢或不均匀。</translation>
    </message>
    <message>
        <source>This reply settled at token %1 of the chart.</source>
        <translation>本次回复在图中第 %1 个词元处趋于稳定。</translation>
    </message>
    <message>
        <source>after 32 steps</source>
        <translation>32 步后可知</translation>
    </message>
    <message>
        <source>not settled</source>
        <translation>未稳定</translation>
    </message>
    <message>
        <source>slowest step of every %1</source>
        <translation>每 %1 步中最慢的一步</translation>
    </message>
    <message>
        <source>%1 of %2 tokens…</source>
        <translation>已完成 %1 / %2 个词元…</translation>
    </message>
    <message>
        <source>Server&apos;s own figures</source>
        <translation>服务器自身的数据</translation>
    </message>
    <message>
        <source>On a remote server: the timings and token counts it sent with the reply. The figures above are measured here, at the client, and include the network.</source>
        <translation>使用远程服务器时：它随回复发送的计时和词元计数。上方的数据是在这里（客户端）测得的，包含网络耗时。</translation>
    </message>
    <message>
        <source>after the first reply</source>
        <translation>首次回复后可知</translation>
    </message>
    <message>
        <source>— (local engine)</source>
        <translation>—（本地引擎）</translation>
    </message>
    <message>
        <source>— (remote server)</source>
        <translation>—（远程服务器）</translation>
    </message>
</context>
<context>
    <name>RemoteChat</name>
    <message>
        <source>%1 needs an API key (%2): %3</source>
        <translation>%1 需要 API 密钥（%2）：%3</translation>
    </message>
    <message>
        <source>%1 refused the API key (%2): %3</source>
        <translation>%1 拒绝了该 API 密钥（%2）：%3</translation>
    </message>
    <message>
        <source>%1 has no %2 (404): it is not an OpenAI-compatible API there. The base URL usually ends in /v1.</source>
        <translation>%1 上没有 %2（404）：那里不是兼容 OpenAI 的 API。基础 URL 通常以 /v1 结尾。</translation>
    </message>
    <message>
        <source>%1 answered %2: %3</source>
        <translation>%1 返回了 %2：%3</translation>
    </message>
    <message>
        <source>Nothing answers at %1 (connection refused): is the server running, on that port?</source>
        <translation>%1 无响应（连接被拒绝）：服务器是否正在该端口上运行？</translation>
    </message>
    <message>
        <source>The host %1 could not be found.</source>
        <translation>找不到主机 %1。</translation>
    </message>
    <message>
        <source>%1 did not answer in time.</source>
        <translation>%1 未及时响应。</translation>
    </message>
    <message>
        <source>The TLS connection to %1 failed: %2</source>
        <translation>与 %1 的 TLS 连接失败：%2</translation>
    </message>
    <message>
        <source>%1 closed the connection.</source>
        <translation>%1 关闭了连接。</translation>
    </message>
    <message>
        <source>%1: %2</source>
        <translation>%1：%2</translation>
    </message>
    <message>
        <source>%1 answered /v1/models with something that is not a model list: it is not an OpenAI-compatible API there.</source>
        <translation>%1 对 /v1/models 的响应不是模型列表：那里不是兼容 OpenAI 的 API。</translation>
    </message>
    <message>
        <source>%1 serves no model.</source>
        <translation>%1 没有提供任何模型。</translation>
    </message>
    <message>
        <source>%1 does not serve “%2”; it serves: %3.</source>
        <translation>%1 未提供“%2”；它提供的是：%3。</translation>
    </message>
    <message>
        <source>an event of the stream was larger than %1 MiB</source>
        <translation>数据流中的一个事件超过了 %1 MiB</translation>
    </message>
    <message>
        <source>the stream sent something that is not a chat chunk (%1)</source>
        <translation>数据流发来了不是聊天数据块的内容（%1）</translation>
    </message>
    <message>
        <source>The reply from %1 failed: %2</source>
        <translation>来自 %1 的回复失败：%2</translation>
    </message>
    <message>
        <source>%1 ended the reply before it was finished.</source>
        <translation>%1 未写完就结束了回复。</translation>
    </message>
    <message numerus="yes">
        <source>%1 Lantern kept the %n token(s) that came.</source>
        <translation>
            <numerusform>%1 Lantern 保留了已收到的 %n 个词元。</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>RemoteEnginesDialog</name>
    <message>
        <source>Remote Engines</source>
        <translation>远程引擎</translation>
    </message>
    <message>
        <source>Add</source>
        <translation>添加</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>GPU server</source>
        <translation>GPU 服务器</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>the first the server lists</source>
        <translation>服务器列出的第一个</translation>
    </message>
    <message>
        <source>Fetch Models</source>
        <translation>获取模型列表</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Base URL</source>
        <translation>基础 URL</translation>
    </message>
    <message>
        <source>API key</source>
        <translation>API 密钥</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Test Connection</source>
        <translation>测试连接</translation>
    </message>
    <message>
        <source>Connect</source>
        <translation>连接</translation>
    </message>
    <message>
        <source>Chat with this server&apos;s model instead of a local one</source>
        <translation>与此服务器上的模型聊天，而不是本地模型</translation>
    </message>
    <message>
        <source>Save</source>
        <translation>保存</translation>
    </message>
    <message>
        <source>Kept in your keyring.</source>
        <translation>保存在你的密钥环中。</translation>
    </message>
    <message>
        <source>No keyring answered (%1): the key is kept for this session only.</source>
        <translation>没有可用的密钥环（%1）：密钥只在本次会话中保留。</translation>
    </message>
    <message>
        <source>Another endpoint is called “%1”.</source>
        <translation>已有另一个端点名为“%1”。</translation>
    </message>
    <message>
        <source>Asking %1…</source>
        <translation>正在请求 %1…</translation>
    </message>
    <message numerus="yes">
        <source>Connected: %1 serves %n model(s) (%2), answering in %3.</source>
        <translation>
            <numerusform>已连接：%1 提供 %n 个模型（%2），响应用时 %3。</numerusform>
        </translation>
    </message>
    <message>
        <source>Context: %1 tokens.</source>
        <translation>上下文：%1 个词元。</translation>
    </message>
</context>
<context>
    <name>RemoteKvPanel</name>
    <message>
        <source>KV cache in use</source>
        <translation>KV 缓存占用</translation>
    </message>
    <message>
        <source>Prefix-cache hits</source>
        <translation>前缀缓存命中率</translation>
    </message>
    <message>
        <source>Running requests</source>
        <translation>运行中的请求</translation>
    </message>
    <message>
        <source>Waiting requests</source>
        <translation>等待中的请求</translation>
    </message>
    <message>
        <source>Preemptions</source>
        <translation>抢占次数</translation>
    </message>
    <message>
        <source>Blocks used / cached / total</source>
        <translation>块：已用 / 已缓存 / 总计</translation>
    </message>
    <message>
        <source>Tokens in the cache</source>
        <translation>缓存中的词元</translation>
    </message>
    <message>
        <source>Prompt / generated tokens</source>
        <translation>提示词元 / 生成词元</translation>
    </message>
    <message>
        <source>Server&apos;s prompt / generation rate</source>
        <translation>服务器的提示处理 / 生成速率</translation>
    </message>
    <message>
        <source>The block map shows the local engine&apos;s own KV memory; a remote server does not send its block table, so only the figures above are shown.</source>
        <translation>块分布图显示的是本地引擎自身的 KV 内存；远程服务器不会发送它的块表，因此只显示上方的数据。</translation>
    </message>
    <message>
        <source>Not connected to a remote server.</source>
        <translation>未连接到远程服务器。</translation>
    </message>
    <message>
        <source>Reading %1 (%2)…</source>
        <translation>正在读取 %1（%2）…</translation>
    </message>
    <message>
        <source>not known yet</source>
        <translation>尚不可知</translation>
    </message>
    <message>
        <source>not exposed</source>
        <translation>未公开</translation>
    </message>
    <message>
        <source>From %1 (%2&apos;s metrics), every second.</source>
        <translation>来自 %1（%2 的指标），每秒更新。</translation>
    </message>
    <message>
        <source>not exposed by this server</source>
        <translation>此服务器未公开</translation>
    </message>
    <message>
        <source>%1 of the KV cache in use</source>
        <translation>KV 缓存已用 %1</translation>
    </message>
    <message>
        <source>KV use not exposed</source>
        <translation>KV 占用未公开</translation>
    </message>
    <message>
        <source>%1 / %2 / %3</source>
        <translation>%1 / %2 / %3</translation>
    </message>
    <message>
        <source>%1 / %2</source>
        <translation>%1 / %2</translation>
    </message>
</context>
<context>
    <name>RemoteMetricsPoller</name>
    <message>
        <source>%1 has no /metrics page (llama-server serves one with --metrics; Ollama has none).</source>
        <translation>%1 没有 /metrics 页面（llama-server 加上 --metrics 才会提供；Ollama 没有）。</translation>
    </message>
    <message>
        <source>%1 refused to show its /metrics (%2).</source>
        <translation>%1 拒绝提供它的 /metrics（%2）。</translation>
    </message>
    <message>
        <source>%1&apos;s /metrics could not be read: %2</source>
        <translation>无法读取 %1 的 /metrics：%2</translation>
    </message>
    <message>
        <source>%1&apos;s /metrics has none of the KV cache figures Lantern knows (vLLM&apos;s, llama-server&apos;s, lantern-server&apos;s).</source>
        <translation>%1 的 /metrics 中没有 Lantern 认得的任何 KV 缓存数据（vLLM、llama-server 或 lantern-server 的）。</translation>
    </message>
</context>
<context>
    <name>ReplyDetails</name>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>the device was lost</source>
        <translation>设备已丢失</translation>
    </message>
    <message>
        <source>the app was closed while generating</source>
        <translation>生成过程中应用被关闭</translation>
    </message>
    <message numerus="yes">
        <source>%Ln token(s)</source>
        <translation>
            <numerusform>%Ln 个词元</numerusform>
        </translation>
    </message>
    <message>
        <source>first token %1</source>
        <translation>首词元 %1</translation>
    </message>
    <message>
        <source>ended by %1</source>
        <translation>结束原因：%1</translation>
    </message>
    <message>
        <source>continued</source>
        <translation>已续写</translation>
    </message>
    <message>
        <source>continued by %1</source>
        <translation>由 %1 续写</translation>
    </message>
    <message numerus="yes">
        <source>%Ln written beside API replies</source>
        <translation>
            <numerusform>%Ln 个与 API 回复同步生成</numerusform>
        </translation>
    </message>
    <message>
        <source>cut off: the connection to the server was lost</source>
        <translation>已中断：与服务器的连接已断开</translation>
    </message>
</context>
<context>
    <name>SamplingPanel</name>
    <message>
        <source>Randomness</source>
        <translation>随机性</translation>
    </message>
    <message>
        <source>0 = always the most likely token (greedy). Higher = more surprising text.</source>
        <translation>0 = 总是选最可能的词元（贪心）。越高，文字越出人意料。</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <source>Keep only the k most likely tokens (0 = off).</source>
        <translation>只保留最可能的 k 个词元（0 = 关闭）。</translation>
    </message>
    <message>
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <source>Keep the most likely tokens that together reach this probability (1 = off).</source>
        <translation>保留累计概率达到该值的最可能词元（1 = 关闭）。</translation>
    </message>
    <message>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <source>Drop tokens less likely than this fraction of the best one (0 = off).</source>
        <translation>丢弃概率低于最佳词元该比例的词元（0 = 关闭）。</translation>
    </message>
    <message>
        <source>Min-p</source>
        <translation>Min-p</translation>
    </message>
    <message>
        <source>Repetition</source>
        <translation>重复控制</translation>
    </message>
    <message>
        <source>Divides the scores of recently used tokens (1 = off).</source>
        <translation>对最近用过的词元的分数进行缩减（1 = 关闭）。</translation>
    </message>
    <message>
        <source>Repeat penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <source>Subtracted once from every token already used (0 = off).</source>
        <translation>每个已用过的词元减去一次该值（0 = 关闭）。</translation>
    </message>
    <message>
        <source>Presence penalty</source>
        <translation>存在惩罚</translation>
    </message>
    <message>
        <source>Subtracted for every time a token was used (0 = off).</source>
        <translation>词元每使用一次就减去一次该值（0 = 关闭）。</translation>
    </message>
    <message>
        <source>Frequency penalty</source>
        <translation>频率惩罚</translation>
    </message>
    <message>
        <source>whole text</source>
        <translation>全部文本</translation>
    </message>
    <message>
        <source> tokens</source>
        <translation> 个词元</translation>
    </message>
    <message>
        <source>How many recent tokens the penalties look at.</source>
        <translation>惩罚项考虑的最近词元数量。</translation>
    </message>
    <message>
        <source>Penalty window</source>
        <translation>惩罚窗口</translation>
    </message>
    <message>
        <source>Length and seed</source>
        <translation>长度与种子</translation>
    </message>
    <message>
        <source>no limit</source>
        <translation>不限</translation>
    </message>
    <message>
        <source>The reply ends after this many tokens (0 = only the context length limits it).</source>
        <translation>回复达到该词元数后结束（0 = 仅受上下文长度限制）。</translation>
    </message>
    <message>
        <source>Max tokens</source>
        <translation>最大词元数</translation>
    </message>
    <message>
        <source>Fixed</source>
        <translation>固定</translation>
    </message>
    <message>
        <source>random each reply</source>
        <translation>每次回复随机</translation>
    </message>
    <message>
        <source>Seed</source>
        <translation>种子</translation>
    </message>
    <message>
        <source>Keep</source>
        <translation>保留</translation>
    </message>
    <message>
        <source>Fix the seed to the one the last reply used, to reproduce it.</source>
        <translation>把种子固定为上一条回复所用的种子，以便重现。</translation>
    </message>
    <message>
        <source>Last seed used</source>
        <translation>上次使用的种子</translation>
    </message>
    <message>
        <source>One per line; \n is a newline</source>
        <translation>每行一个；\n 表示换行</translation>
    </message>
    <message>
        <source>Stop strings</source>
        <translation>停止字符串</translation>
    </message>
    <message>
        <source>Reset to Defaults</source>
        <translation>恢复默认值</translation>
    </message>
    <message>
        <source>Last token&apos;s candidates</source>
        <translation>最近词元的候选项</translation>
    </message>
    <message>
        <source>A remote server does not send the candidates it drew from.</source>
        <translation>远程服务器不会发送它采样时的候选词元。</translation>
    </message>
    <message>
        <source>%1 does not take this setting: it is not sent.</source>
        <translation>%1 不支持此设置：不会发送。</translation>
    </message>
    <message>
        <source>top-k</source>
        <translation>top-k</translation>
    </message>
    <message>
        <source>min-p</source>
        <translation>min-p</translation>
    </message>
    <message>
        <source>repeat penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <source>penalty window</source>
        <translation>惩罚窗口</translation>
    </message>
    <message>
        <source>On %1 these settings go with each request: a change applies from the next reply.</source>
        <translation>在 %1 上，这些设置随每个请求发送：更改从下一条回复起生效。</translation>
    </message>
    <message>
        <source>Not sent (the server does not take them): %1.</source>
        <translation>未发送（服务器不支持）：%1。</translation>
    </message>
</context>
<context>
    <name>StepProfilePanel</name>
    <message>
        <source>Time the Next Step</source>
        <translation>为下一步计时</translation>
    </message>
    <message>
        <source>Times the next steps of a reply op by op on the device (GPU timestamps, and clocks inside fused layers) and shows where one step&apos;s time goes. If no reply is being written, the next reply&apos;s steps are timed.</source>
        <translation>在设备上逐个算子为回复接下来的几步计时（GPU 时间戳，以及融合层内部的时钟），并显示一步的时间花在哪里。如果当前没有在写回复，就为下一次回复的步骤计时。</translation>
    </message>
    <message>
        <source>Timing the next two steps (the first may compile the timed kernels)…</source>
        <translation>正在为接下来的两步计时（第一步可能需要编译计时用的内核）…</translation>
    </message>
    <message>
        <source>Press the button while a reply is written, or before sending one.</source>
        <translation>在回复生成过程中或发送消息之前按下按钮。</translation>
    </message>
    <message>
        <source>Load a model to time its steps.</source>
        <translation>加载模型后即可为其步骤计时。</translation>
    </message>
    <message>
        <source>Embedding lookup</source>
        <translation>嵌入查找</translation>
    </message>
    <message>
        <source>Q/K/V, RoPE, KV store</source>
        <translation>Q/K/V、RoPE、写入 KV</translation>
    </message>
    <message>
        <source>Attention</source>
        <translation>注意力</translation>
    </message>
    <message>
        <source>Attention output</source>
        <translation>注意力输出</translation>
    </message>
    <message>
        <source>FFN gate/up, SwiGLU</source>
        <translation>FFN 门控/上投影、SwiGLU</translation>
    </message>
    <message>
        <source>FFN down</source>
        <translation>FFN 下投影</translation>
    </message>
    <message>
        <source>Output layer (logits)</source>
        <translation>输出层（logits）</translation>
    </message>
    <message>
        <source>Layers (fused dispatches)</source>
        <translation>各层（融合调度）</translation>
    </message>
    <message>
        <source>Layer dispatches starting</source>
        <translation>各层调度的启动</translation>
    </message>
    <message>
        <source>This device cannot time its steps (no timestamp queries).</source>
        <translation>此设备无法为步骤计时（不支持时间戳查询）。</translation>
    </message>
    <message>
        <source>Token %1, timed on the device:</source>
        <translation>第 %1 个词元，在设备上计时：</translation>
    </message>
    <message numerus="yes">
        <source>%1 of %2 in all, %n dispatch(es)%3</source>
        <translation>
            <numerusform>%1（共 %2），%n 次调度%3</numerusform>
        </translation>
    </message>
    <message>
        <source> (each layer one dispatch)</source>
        <translation>（每层一次调度）</translation>
    </message>
    <message>
        <source>%1 GB/s</source>
        <translation>%1 GB/s</translation>
    </message>
    <message>
        <source>%1 % waiting</source>
        <translation>等待 %1 %</translation>
    </message>
</context>
<context>
    <name>SystemPromptBar</name>
    <message>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <source>Optional instructions the model sees before the conversation</source>
        <translation>可选：模型在对话开始前看到的指示</translation>
    </message>
</context>
<context>
    <name>TurnController</name>
    <message>
        <source>Could not write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message numerus="yes">
        <source>%n earlier turn(s) were dropped to make room in the context.</source>
        <translation>
            <numerusform>为腾出上下文空间，丢弃了 %n 轮较早的对话。</numerusform>
        </translation>
    </message>
    <message>
        <source>The reply filled the context. Your next message makes room by dropping the oldest turns.</source>
        <translation>回复已占满上下文。发送下一条消息时会丢弃最早的对话轮次以腾出空间。</translation>
    </message>
    <message>
        <source>The context is full. Start a new chat, or turn on File &gt; When the Context Is Full, Drop the Oldest Turns.</source>
        <translation>上下文已满。请开始新对话，或打开“文件 &gt; 上下文已满时，丢弃最早的对话轮次”。</translation>
    </message>
    <message>
        <source>Turn on File &gt; When the Context Is Full, Drop the Oldest Turns to make room, or start a new chat.</source>
        <translation>打开“文件 &gt; 上下文已满时，丢弃最早的对话轮次”即可腾出空间，或开始新对话。</translation>
    </message>
    <message>
        <source>There is no room left in the context to continue this reply. %1</source>
        <translation>上下文已没有空间继续这条回复。%1</translation>
    </message>
    <message>
        <source>Start a new chat to go on.</source>
        <translation>请开始新对话继续。</translation>
    </message>
    <message>
        <source>The conversation would be %1 tokens long; the context holds %2, and a reply needs room too.</source>
        <translation>对话将长达 %1 个词元；上下文只能容纳 %2 个，还需为回复留出空间。</translation>
    </message>
    <message>
        <source>Stopped before the reply began: your message is back in the input.</source>
        <translation>回复开始前已停止：你的消息已放回输入框。</translation>
    </message>
    <message>
        <source>This message does not fit in the context. %1 %2</source>
        <translation>这条消息放不进上下文。%1%2</translation>
    </message>
    <message>
        <source>Shorten it, or start a new chat.</source>
        <translation>请缩短消息，或开始新对话。</translation>
    </message>
    <message>
        <source>There is no room left in the context for a new reply. %1 %2</source>
        <translation>上下文已没有空间生成新的回复。%1%2</translation>
    </message>
    <message>
        <source>Version %1 of %2 of this message; the conversation below follows it.</source>
        <translation>这条消息的第 %1 个版本（共 %2 个）；下方的对话随之切换。</translation>
    </message>
    <message>
        <source>Editing a message: sending makes a new version of it, and the earlier one stays (‹ › switches between them; Esc cancels).</source>
        <translation>正在编辑消息：发送后会生成它的新版本，原来的版本仍会保留（用 ‹ › 切换；按 Esc 取消）。</translation>
    </message>
</context>
<context>
    <name>main</name>
    <message>
        <source>Chat with Llama models locally and see inside the engine.</source>
        <translation>在本地与 Llama 模型聊天，并看清引擎内部。</translation>
    </message>
    <message>
        <source>Load the GGUF model in &lt;file&gt; at start.</source>
        <translation>启动时加载 &lt;file&gt; 中的 GGUF 模型。</translation>
    </message>
    <message>
        <source>file</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>Run on the Vulkan device &lt;selector&gt;: an index or part of its name.</source>
        <translation>在 Vulkan 设备 &lt;selector&gt; 上运行：设备序号或名称的一部分。</translation>
    </message>
    <message>
        <source>selector</source>
        <translation>选择器</translation>
    </message>
    <message>
        <source>A GGUF model to load (same as --model).</source>
        <translation>要加载的 GGUF 模型（与 --model 相同）。</translation>
    </message>
    <message>
        <source>Chat on the OpenAI-compatible server at &lt;url&gt; (e.g. http://gpu-box:8000/v1) instead of loading a local model. API key: LANTERN_API_KEY, else the keyring entry of an endpoint saved with that URL.</source>
        <translation>与 &lt;url&gt; 上兼容 OpenAI 的服务器聊天（例如 http://gpu-box:8000/v1），而不是加载本地模型。API 密钥：取自 LANTERN_API_KEY，否则取自以该 URL 保存的端点在密钥环中的条目。</translation>
    </message>
    <message>
        <source>url</source>
        <translation>url</translation>
    </message>
    <message>
        <source>With --remote: the model to ask for (default: the first it lists).</source>
        <translation>配合 --remote 使用：要请求的模型（默认：服务器列出的第一个）。</translation>
    </message>
    <message>
        <source>name</source>
        <translation>名称</translation>
    </message>
</context>
<context>
    <name>remote</name>
    <message>
        <source>OpenAI-compatible server</source>
        <translation>兼容 OpenAI 的服务器</translation>
    </message>
    <message>
        <source>The address is empty.</source>
        <translation>地址为空。</translation>
    </message>
    <message>
        <source>“%1” is not a server address.</source>
        <translation>“%1”不是服务器地址。</translation>
    </message>
    <message>
        <source>The address must begin with http:// or https://.</source>
        <translation>地址必须以 http:// 或 https:// 开头。</translation>
    </message>
</context>
</TS>
