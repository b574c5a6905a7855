import { createRoot } from 'react-dom/client';
import { StrictMode } from 'react';
import { App } from './App.jsx';
import './app.css';

createRoot(document.getElementById('root')).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
