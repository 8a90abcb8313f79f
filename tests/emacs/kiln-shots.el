;;; kiln-shots.el --- Drive kiln.el in a terminal Emacs for 65-emacs.sh's screenshots  -*- lexical-binding: t; -*-

;; Loaded by `emacs -nw -Q' inside tmux (tests/suites/65-emacs.sh), with
;; KILN_BIN, KILN_SHOT_URL (the fake model's URL) and KILN_SHOT_DIR (where
;; the steps are signalled) in the environment.  It asks for code, shows
;; the proposal's hunk for review, and writes DIR/review; when the suite
;; has captured the screen it writes DIR/go, and this accepts the hunk,
;; runs it and shows *kiln-output*, then writes DIR/output; when the
;; suite writes DIR/go2 it shows *kiln-conversation* and writes
;; DIR/conversation; when the suite writes DIR/done (or after two
;; minutes) Emacs exits.  Emacs's pid
;; is in DIR/pid, for the suite to end it should it not.  Each wait is
;; bounded; a failure is written to DIR/error.

;;; Code:

(require 'kiln)
(require 'python)

(defvar kiln-shots--dir (file-name-as-directory (getenv "KILN_SHOT_DIR")))

(defun kiln-shots--signal (name &optional text)
  "Write the file NAME in the shots folder, holding TEXT."
  (with-temp-file (concat kiln-shots--dir name) (insert (or text ""))))

(defun kiln-shots--poll (pred then &optional tries)
  "Call THEN once PRED is non-nil, checking every 0.1 s, at most TRIES times."
  (let ((n (or tries 600)))
    (if (funcall pred)
        (funcall then)
      (if (<= n 0)
          (kiln-shots--signal "error" "timed out")
        (run-at-time 0.1 nil #'kiln-shots--poll pred then (1- n))))))

(setq kiln-command (list (getenv "KILN_BIN"))
      kiln-llm-provider "ollama"
      kiln-llm-url (getenv "KILN_SHOT_URL")
      kiln-llm-model "fake-coder"
      inhibit-startup-screen t
      ring-bell-function #'ignore)

(defun kiln-shots--start ()
  "Step 1: a Python buffer, an intent, its proposal under review."
  (condition-case err
      (let ((buf (get-buffer-create "report.py")))
        (switch-to-buffer buf)
        (delete-other-windows)
        (python-mode)
        (insert "# monthly report\nsales = [10, 20, 30]\ntotal = sum(sales)\n")
        (goto-char (point-min))
        (forward-line 2)
        (kiln-mode 1)
        (let ((req (kiln-intent "print a greeting")))
          (kiln-shots--poll
           (lambda () (and (not (memq req kiln--intents)) kiln--review))
           (lambda ()
             (kiln--close-preview)
             (delete-other-windows)
             (goto-char (point-min))
             (redisplay t)
             (kiln-shots--signal "review")
             (kiln-shots--poll (lambda () (file-exists-p (concat kiln-shots--dir "go")))
                               #'kiln-shots--run)))))
    (error (kiln-shots--signal "error" (error-message-string err)))))

(defun kiln-shots--run ()
  "Step 2: accept the hunk, run it, show the output."
  (condition-case err
      (progn
        (kiln-accept-all)
        (let ((run (kiln-run)))
          (kiln-shots--poll
           (lambda () (not (eq kiln--run run)))
           (lambda ()
             (delete-other-windows)
             (split-window-below)
             (other-window 1)
             (switch-to-buffer (kiln--output-buffer))
             (goto-char (point-min))
             (redisplay t)
             (kiln-shots--signal "output")
             (kiln-shots--poll (lambda () (file-exists-p (concat kiln-shots--dir "go2")))
                               #'kiln-shots--conversation)))))
    (error (kiln-shots--signal "error" (error-message-string err)))))

(defun kiln-shots--conversation ()
  "Step 3: the conversation, alone in the frame."
  (delete-other-windows)
  (switch-to-buffer (kiln--conversation-buffer))
  (goto-char (point-min))
  (redisplay t)
  (kiln-shots--signal "conversation")
  (kiln-shots--poll (lambda () (file-exists-p (concat kiln-shots--dir "done")))
                    #'kiln-shots--quit 1200))

(defun kiln-shots--quit ()
  "Stop the server and leave Emacs."
  (kiln-shutdown)
  (kill-emacs 0))

(kiln-shots--signal "pid" (number-to-string (emacs-pid)))
;; Whatever happens, this Emacs does not outlive its suite for long.
(run-at-time 300 nil #'kiln-shots--quit)
(run-at-time 0.5 nil #'kiln-shots--start)

;;; kiln-shots.el ends here
