// A chat page on the real `useChat` (its default transport POSTs to /api/chat and reads the UI
// message stream). browser-check.mjs drives it: the DOM carries data-* attributes for each part,
// and `window.chatProbe` mirrors useChat's state, so the check reads what useChat holds, not a
// re-parse of the page.
import { useChat } from '@ai-sdk/react';
import { lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { useEffect, useRef, useState } from 'react';

const toolName = part => (part.type === 'dynamic-tool' ? part.toolName : part.type.slice('tool-'.length));
const isTool = part => part.type === 'dynamic-tool' || part.type.startsWith('tool-');

function Json({ value }) {
  return <pre className="json">{JSON.stringify(value, null, 2)}</pre>;
}

// A tool call waiting for approval: answered with addToolApprovalResponse; useChat then sends the
// follow-up by itself (sendAutomaticallyWhen), which the server resumes into this message.
function Approval({ part, respond }) {
  if (part.state !== 'approval-requested') return null;
  const answer = approved => respond({ id: part.approval.id, approved, ...(approved ? {} : { reason: 'denied on the page' }) });
  return (
    <div className="approval">
      <button type="button" className="approve" onClick={() => answer(true)}>
        Approve
      </button>{' '}
      <button type="button" className="deny" onClick={() => answer(false)}>
        Deny
      </button>
    </div>
  );
}

function ToolPart({ part, respond }) {
  return (
    <div className="tool">
      <div className="tool-head">
        <span className="tool-name">{toolName(part)}</span> <span className="tool-state">{part.state}</span>
      </div>
      {part.input !== undefined && <Json value={part.input} />}
      {part.output !== undefined && <Json value={part.output} />}
      {part.errorText !== undefined && <div className="tool-error">{part.errorText}</div>}
      <Approval part={part} respond={respond} />
    </div>
  );
}

function PartView({ part, respond }) {
  const attrs = { 'data-part-type': part.type, 'data-state': part.state ?? '' };
  if (part.type === 'text') return <p className="text" {...attrs}>{part.text}</p>;
  if (part.type === 'reasoning') {
    return (
      <details className="reasoning" open {...attrs}>
        <summary>reasoning</summary>
        {part.text}
      </details>
    );
  }
  if (part.type === 'step-start') return <hr className="step" {...attrs} />;
  if (isTool(part)) {
    return (
      <div {...attrs} data-tool-name={toolName(part)}>
        <ToolPart part={part} respond={respond} />
      </div>
    );
  }
  if (part.type === 'source-url') {
    return (
      <div className="source" {...attrs}>
        source: <a href={part.url}>{part.title ?? part.url}</a>
      </div>
    );
  }
  return (
    <div className="other" {...attrs}>
      {part.type}
      <Json value={part} />
    </div>
  );
}

export function App() {
  const [draft, setDraft] = useState('');
  const history = useRef([]);
  const [finished, setFinished] = useState([]);
  // ?chat=<id>: a fixed chat id, resumed on load (useChat's resume: GET /api/chat/<id>/stream).
  const chatId = new URLSearchParams(window.location.search).get('chat') ?? undefined;
  const { messages, sendMessage, status, error, addToolApprovalResponse, stop } = useChat({
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    ...(chatId ? { id: chatId, resume: true } : {}),
    // Once per request, after the status settled: the check waits for the n-th one.
    onFinish: ({ isAbort, isDisconnect, isError, finishReason }) =>
      setFinished(all => [...all, { isAbort, isDisconnect, isError, finishReason }]),
  });
  if (history.current.at(-1) !== status) history.current.push(status);

  useEffect(() => {
    window.chatProbe = {
      status,
      statusHistory: [...history.current],
      error: error ? { name: error.name, message: error.message } : null,
      messages,
      finished,
    };
  }, [status, error, messages, finished]);

  const busy = status === 'submitted' || status === 'streaming';
  // stop() only stops this page reading; a resumable answer runs on at the server unless it is
  // stopped there too (agentstream's stop_route: DELETE on the chat's stream).
  const stopAnswer = () => {
    stop();
    if (chatId) fetch(`/api/chat/${encodeURIComponent(chatId)}/stream`, { method: 'DELETE' });
  };
  const submit = event => {
    event.preventDefault();
    if (busy || !draft.trim()) return;
    sendMessage({ text: draft });
    setDraft('');
  };
  return (
    <main data-status={status}>
      <header>
        <h1>useChat</h1>
        <span id="status">{status}</span>
      </header>
      <section id="messages">
        {messages.map(message => (
          <article key={message.id} className={`message ${message.role}`} data-role={message.role}>
            <div className="role">{message.role}</div>
            <div className="parts">
              {message.parts.map((part, i) => (
                <PartView key={i} part={part} respond={addToolApprovalResponse} />
              ))}
            </div>
          </article>
        ))}
      </section>
      {error && (
        <div id="error" role="alert">
          {error.name}: {error.message}
        </div>
      )}
      <form onSubmit={submit}>
        <input id="prompt" value={draft} onChange={e => setDraft(e.currentTarget.value)} placeholder="Ask something" />
        <button id="send" type="submit" disabled={busy}>
          Send
        </button>
        {busy && (
          <button id="stop" type="button" onClick={stopAnswer}>
            Stop
          </button>
        )}
      </form>
    </main>
  );
}
