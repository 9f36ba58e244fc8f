import { createRoot } from 'react-dom/client';

function App() {
  return (
    <main style={{ fontFamily: 'system-ui, sans-serif', padding: 24 }}>
      <h1>ptydeck</h1>
      <p>Persistent terminals for AI agents, with a person in the loop.</p>
    </main>
  );
}

createRoot(document.getElementById('root')!).render(<App />);
