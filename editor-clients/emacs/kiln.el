;;; kiln.el --- Code from plain words, validated, reviewed and sandboxed  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The kiln authors

;; Author: The kiln authors
;; Maintainer: The kiln authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, languages, processes
;; URL: https://example.invalid/kiln
;; SPDX-License-Identifier: MIT

;; This file is not part of GNU Emacs.

;;; Commentary:

;; kiln gives Emacs a safe code interpreter.  Write what you want in
;; plain words with `kiln-intent': a model writes the code, kiln's
;; validator checks it, and the proposal is shown in the buffer as
;; hunks to accept or reject (`kiln-accept-hunk', `kiln-reject-hunk',
;; `kiln-accept-all', `kiln-reject-all', or `kiln-ediff').  Nothing is
;; written without your say, and a buffer that changed since the
;; request is never written.  `kiln-run' approves and runs the
;; proposal (or runs the region or the buffer) in kiln's sandbox; the
;; output streams into the *kiln-output* buffer, with images inline.
;; What the code wrote in the project is listed there, each file with
;; buttons to review, apply and discard it, and written only by
;; `kiln-apply-changes', which has kiln apply it (binary files too) and
;; never overwrites a file changed since the run.  Code the validator
;; denied runs only on purpose: `kiln-run-anyway', where kiln's config
;; allows an override, after one more question.  `kiln-conversation'
;; keeps every intent, the model's words, each repair, each run's output
;; and its ledger, as gptel's chat buffer would.  The model's API key
;; comes from `auth-source', never from an option.
;; `kiln-mode' puts the validator's diagnostics on the buffer through
;; Flymake.
;;
;; The package talks to the kiln server (`kiln-command') over stdio
;; with the `jsonrpc' library that comes with Emacs.  It binds no keys:
;; bind `kiln-command-map' to a prefix of your choice, for example
;;
;;   (keymap-set kiln-mode-map "C-c k" 'kiln-command-map)   ; Emacs 29+
;;   (define-key kiln-mode-map (kbd "C-c k") 'kiln-command-map)
;;
;; See docs/editors.md in kiln's repository for the whole story.

;;; Code:

(require 'cl-lib)
(require 'jsonrpc)
(require 'flymake)
(require 'subr-x)

(defgroup kiln nil
  "Validated, sandboxed code from plain words, with the kiln server."
  :group 'tools
  :prefix "kiln-")

;;;; Options

(defcustom kiln-command '("kiln")
  "The command that starts the kiln server: a program and its arguments."
  :type '(repeat string))

(defcustom kiln-llm-provider nil
  "The model provider kiln asks (kiln's llm.provider).
\"ollama\" (its native API), \"openai\" (any OpenAI-compatible
server: vLLM, llama.cpp, LM Studio...), \"anthropic\" (the Messages
API) or \"bedrock\" (Amazon Bedrock's Converse API; see
`kiln-llm-region' and `kiln-llm-aws-profile').  nil leaves it to the
server's config file and environment.  The API key is never set
here: see `kiln-llm-auth-source'."
  :type '(choice (const :tag "The server's choice" nil)
                 (const :tag "Ollama" "ollama")
                 (const :tag "OpenAI-compatible" "openai")
                 (const :tag "Anthropic" "anthropic")
                 (const :tag "Amazon Bedrock" "bedrock")
                 (string :tag "Another name kiln knows")))

(defcustom kiln-llm-url nil
  "The model server's base URL (kiln's llm.url), or nil for the server's choice.
For Bedrock, nil reaches the region's endpoint."
  :type '(choice (const :tag "The server's choice" nil) string))

(defcustom kiln-llm-model nil
  "The model's name (kiln's llm.model), or nil for the server's choice.
For Bedrock a model id, or an inference profile's id or ARN."
  :type '(choice (const :tag "The server's choice" nil) string))

(defcustom kiln-llm-region nil
  "Bedrock only: the AWS region to sign for (kiln's llm.region).
nil leaves it to the server: AWS_REGION, AWS_DEFAULT_REGION, then
the region of ~/.aws/config."
  :type '(choice (const :tag "The server's choice" nil) string))

(defcustom kiln-llm-aws-profile nil
  "Bedrock only: the AWS profile whose credentials kiln signs with.
Given to the server as AWS_PROFILE (kiln reads the profile's section
of ~/.aws/config and ~/.aws/credentials); nil leaves the environment
as it is."
  :type '(choice (const :tag "The environment's" nil) string))

(defcustom kiln-llm-temperature nil
  "The model's sampling temperature (kiln's llm.temperature), or nil."
  :type '(choice (const :tag "The server's choice" nil) number))

(defcustom kiln-llm-max-tokens nil
  "The longest answer, in tokens (kiln's llm.maxTokens), or nil."
  :type '(choice (const :tag "The server's choice" nil) integer))

(defcustom kiln-llm-cache nil
  "Whether kiln answers an intent it has seen from its answer cache.
kiln's llm.cache: `on', `off', or nil for the server's choice."
  :type '(choice (const :tag "The server's choice" nil)
                 (const :tag "On" on) (const :tag "Off" off)))

(defcustom kiln-llm-timeouts nil
  "The model's timeouts, in milliseconds, as a plist (kiln's llm section).
Keys not given are the server's choice.  Keys: :connectTimeoutMs,
:idleTimeoutMs (longest silence within an answer) and :totalTimeoutMs
\(longest whole answer)."
  :type '(plist :key-type (choice (const :connectTimeoutMs) (const :idleTimeoutMs)
                                  (const :totalTimeoutMs))
                :value-type integer))

(defcustom kiln-llm-auth-source t
  "Whether the model's API key is taken from Emacs's secret store.
When non-nil and `kiln-llm-provider' is not \"ollama\", kiln.el asks
`auth-source' (~/.authinfo.gpg, the Secret Service, pass...) for the
entry of the model server's host (from `kiln-llm-url', else the
provider's: api.openai.com, api.anthropic.com,
bedrock-runtime.REGION.amazonaws.com) and user `kiln-llm-auth-user',
and sends its secret as llm.apiKey at `initialize'.  The key is never
kept in an option, so `customize' never writes it to `custom-file';
while one is sent, the connection's JSON-RPC events log is off, so
no buffer holds it.  nil: the server finds its key itself
\(KILN_API_KEY, ANTHROPIC_API_KEY, AWS credentials).  For example:

  machine api.anthropic.com login apikey password sk-ant-..."
  :type 'boolean)

(defcustom kiln-llm-auth-user "apikey"
  "The user (login) of the model server's entry in `auth-source'.
\"apikey\", as gptel's, so one entry serves both; nil matches any."
  :type '(choice (const :tag "Any" nil) string))

(defcustom kiln-allow-override nil
  "Whether kiln may run code its validator denies when you say so.
kiln's validator.allowOverride: `on' lets `kiln-run-anyway' run your
own denied code after one more confirmation (code the model wrote
never runs past a deny); `off' forbids it; nil leaves it to kiln's
config file."
  :type '(choice (const :tag "The server's choice" nil)
                 (const :tag "On" on) (const :tag "Off" off)))

(defcustom kiln-validator-profile nil
  "The validator profile: \"strict\", \"standard\", \"relaxed\" or \"off\".
nil leaves it to the server's config file (default \"standard\")."
  :type '(choice (const :tag "The server's choice" nil) string))

(defcustom kiln-limits nil
  "Default limits of a run, as a plist such as (:wallMs 10000).
Sent as the sandbox's limits: :wallMs, :cpuMs, :memoryBytes,
:processes, :outputBytes and the others of kiln's configuration."
  :type '(plist :key-type symbol :value-type integer))

(defcustom kiln-init-options nil
  "More `initializationOptions', a plist laid over what the options build.
For example (:intent (:maxRepairAttempts 2))."
  :type '(plist :key-type symbol :value-type sexp))

(defcustom kiln-repair-attempts 0
  "Runs of a proposal, repairs included; 0 or 1 means no repair."
  :type 'integer)

(defcustom kiln-auto-repair nil
  "When non-nil, a repair the validator allows runs in the same run.
It is sent as `intent/approve's repair.auto.  When nil, each repair
of a failed run is a new proposal: it is reviewed, and `kiln-run'
approves it (unless kiln's own intent.autoRepair is true)."
  :type 'boolean)

(defcustom kiln-explain nil
  "When non-nil, a successful run of a proposal is explained by the model."
  :type 'boolean)

(defcustom kiln-replace-nul 'auto
  "Whether the server sends the character U+0000 as U+FFFD.
Emacs 28's JSON parser refuses the escape \\u0000, and `jsonrpc'
then drops the whole message.  `auto' asks for the replacement
when this Emacs's parser refuses it."
  :type '(choice (const :tag "When this Emacs needs it" auto)
                 (const :tag "Always" t)
                 (const :tag "Never" nil)))

(defcustom kiln-languages
  '((python-mode . "python") (python-ts-mode . "python")
    (sh-mode . "bash") (bash-ts-mode . "bash")
    (js-mode . "javascript") (js-ts-mode . "javascript")
    (js2-mode . "javascript") (js-jsx-mode . "javascript")
    (rjsx-mode . "javascript"))
  "Major modes and the kiln language of their buffers."
  :type '(alist :key-type symbol :value-type string))

(defcustom kiln-flymake t
  "When non-nil, `kiln-mode' turns on `flymake-mode' with kiln's backend."
  :type 'boolean)

(defcustom kiln-start-timeout 30
  "Seconds to wait for the server to start and answer `initialize'."
  :type 'number)

(defcustom kiln-validate-timeout 30
  "Seconds to wait for `kiln-validate'."
  :type 'number)

(defcustom kiln-output-buffer-name "*kiln-output*"
  "The name of the buffer runs stream into."
  :type 'string)

(defcustom kiln-output-max-image-width 600
  "The widest an image in the output buffer is shown, in pixels."
  :type 'integer)

(defcustom kiln-display-directory (locate-user-emacs-file "kiln/displays/")
  "Where images and other displays a run sends are saved.
Each is a file of its own, named after the display, with the extension
of its MIME type (.png, .svg, ...).  Emacs never removes them."
  :type 'directory)

(defcustom kiln-external-viewer
  (and (executable-find "xdg-open") '("xdg-open"))
  "The program (and its arguments) that opens an image in a terminal Emacs.
The file's name is added last.  nil uses `browse-url-of-file'."
  :type '(choice (const :tag "browse-url-of-file" nil) (repeat string)))

(defface kiln-stdout '((t :inherit default))
  "Face of a program's standard output.")

(defface kiln-stderr '((t :inherit font-lock-warning-face))
  "Face of a program's standard error.")

(defface kiln-note '((t :inherit shadow))
  "Face of kiln's own lines in the output buffer.")

(defface kiln-success '((t :inherit success))
  "Face of a run's summary when it succeeded.")

(defface kiln-failure '((t :inherit error))
  "Face of a run's summary when it failed.")

(defface kiln-explanation '((t :inherit italic))
  "Face of the model's explanation of a run.")

(defface kiln-hunk-removed
  '((((class color) (min-colors 88) (background light)) :background "#ffdddd" :extend t)
    (((class color) (min-colors 88) (background dark)) :background "#553333" :extend t)
    (t :inherit diff-removed))
  "Face of the lines a proposed hunk removes.")

(defface kiln-hunk-added
  '((((class color) (min-colors 88) (background light)) :background "#ddffdd" :extend t)
    (((class color) (min-colors 88) (background dark)) :background "#335533" :extend t)
    (t :inherit diff-added))
  "Face of the lines a proposed hunk adds.")

(defface kiln-hunk-header '((t :inherit (shadow bold)))
  "Face of a proposed hunk's header line.")

;;;; The connection

(defvar kiln--conn nil "The connection to the server (a jsonrpc process connection).")
(defvar kiln--stopping nil "Non-nil while the server is being stopped on purpose.")
(defvar kiln--methods nil "The methods the running server serves (strings).")
(defvar kiln--encoding "utf-16" "The position encoding the server chose.")
(defvar kiln--status nil "What the server is doing, for the mode line, or nil.")
(defvar kiln-last-death nil
  "The report of the last unexpected exit of the server, or nil.")
(defvar kiln--token-count 0 "Counter for `workDoneToken's.")
(defvar kiln--session-id nil "This Emacs's intent session.")

(defun kiln--json-refuses-nul-p ()
  "Non-nil when this Emacs's JSON parser refuses the escape \\u0000."
  (condition-case nil
      (not (json-parse-string "\"\\u0000\""))
    (error t)))

(defun kiln--llm-host ()
  "The host whose API key `auth-source' is asked for, or nil."
  (require 'url-parse)
  (cond
   (kiln-llm-url (url-host (url-generic-parse-url kiln-llm-url)))
   ((equal kiln-llm-provider "openai") "api.openai.com")
   ((equal kiln-llm-provider "anthropic") "api.anthropic.com")
   ((equal kiln-llm-provider "bedrock")
    (and kiln-llm-region (format "bedrock-runtime.%s.amazonaws.com" kiln-llm-region)))))

(declare-function url-host "url-parse" (cl-x))
(declare-function url-generic-parse-url "url-parse" (url))
(declare-function auth-source-search "auth-source" (&rest spec))

(defun kiln--api-key ()
  "The model's API key from `auth-source', or nil (see `kiln-llm-auth-source')."
  (let ((host (and kiln-llm-auth-source kiln-llm-provider
                   (not (equal kiln-llm-provider "ollama"))
                   (kiln--llm-host))))
    (when host
      (require 'auth-source)
      (let* ((found (car (apply #'auth-source-search :host host :max 1 :require '(:secret)
                                (and kiln-llm-auth-user (list :user kiln-llm-auth-user)))))
             (secret (plist-get found :secret)))
        (if (functionp secret) (funcall secret) secret)))))

(defun kiln--init-options (&optional api-key)
  "The `initializationOptions' built from the options, with API-KEY if given."
  (let ((llm (append (and kiln-llm-provider (list :provider kiln-llm-provider))
                     (and kiln-llm-url (list :url kiln-llm-url))
                     (and kiln-llm-model (list :model kiln-llm-model))
                     (and kiln-llm-region (list :region kiln-llm-region))
                     (and kiln-llm-temperature (list :temperature kiln-llm-temperature))
                     (and kiln-llm-max-tokens (list :maxTokens kiln-llm-max-tokens))
                     (and kiln-llm-cache (list :cache (if (eq kiln-llm-cache 'on) t :json-false)))
                     (cl-loop for (k v) on kiln-llm-timeouts by #'cddr
                              when v append (list k v))
                     (and api-key (list :apiKey api-key))))
        (validator (append (and kiln-validator-profile (list :profile kiln-validator-profile))
                           (and kiln-allow-override
                                (list :allowOverride (if (eq kiln-allow-override 'on)
                                                         t :json-false)))))
        (opts nil))
    (when llm (setq opts (plist-put opts :llm llm)))
    (when validator (setq opts (plist-put opts :validator validator)))
    (when kiln-limits
      (setq opts (plist-put opts :sandbox (list :limits kiln-limits))))
    (when (if (eq kiln-replace-nul 'auto) (kiln--json-refuses-nul-p) kiln-replace-nul)
      (setq opts (plist-put opts :protocol (list :replaceNul t))))
    (cl-loop for (k v) on kiln-init-options by #'cddr
             do (setq opts (plist-put opts k
                                      (if (and (consp v) (consp (plist-get opts k)))
                                          (append v (plist-get opts k))
                                        v))))
    (or opts (make-hash-table))))

(defun kiln--path-uri (file)
  "The file: URI of FILE."
  (concat "file://" (kiln--uri-escape (expand-file-name file) "/")))

(defun kiln--uri-escape (text &optional keep)
  "TEXT with every byte but unreserved ones (and those in KEEP) %-encoded."
  (mapconcat (lambda (b)
               (if (or (<= ?a b ?z) (<= ?A b ?Z) (<= ?0 b ?9) (memq b '(?- ?_ ?. ?~))
                       (and keep (string-search (string b) keep)))
                   (string b)
                 (format "%%%02X" b)))
             (encode-coding-string text 'utf-8 t) ""))

(defun kiln--workspace ()
  "The folder the server sees as the workspace."
  (let ((proj (and (fboundp 'project-current) (project-current nil))))
    (expand-file-name (if proj (project-root proj) default-directory))))

(declare-function project-root "project" (project))

(defun kiln-running-p ()
  "Return non-nil when the kiln server is running."
  (and kiln--conn (jsonrpc-running-p kiln--conn)))

(defun kiln--stderr-tail (conn &optional lines)
  "The last LINES (default 10) lines CONN's server wrote on stderr."
  (let ((buf (ignore-errors (jsonrpc-stderr-buffer conn))))
    (if (not (buffer-live-p buf))
        ""
      (with-current-buffer buf
        (save-excursion
          (goto-char (point-max))
          (skip-chars-backward "\n")
          (let ((end (point)))
            (forward-line (- 1 (or lines 10)))
            (string-trim (buffer-substring-no-properties (line-beginning-position) end))))))))

(defun kiln--drain-stderr (conn)
  "Read what CONN's server still has to say on stderr, for a second at most."
  (let* ((buf (ignore-errors (jsonrpc-stderr-buffer conn)))
         (proc (and (buffer-live-p buf) (get-buffer-process buf)))
         (deadline (+ (float-time) 1)))
    (while (and proc (process-live-p proc) (< (float-time) deadline))
      (accept-process-output proc 0.05))))

(defun kiln--on-shutdown (conn)
  "CONN's server process ended: say so unless it was asked to stop."
  (let* ((proc (jsonrpc--process conn))
         (status (process-exit-status proc))
         (how (if (eq (process-status proc) 'signal)
                  (format "was killed by signal %s" status)
                (format "exited with status %s" status))))
    (when (eq conn kiln--conn)
      (setq kiln--conn nil kiln--status nil)
      (kiln--run-died how))
    (unless kiln--stopping
      ;; stderr is its own pipe: let its last lines arrive.
      (run-at-time 0.1 nil #'kiln--report-death conn how))))

(defun kiln--report-death (conn how)
  "Report that CONN's server ended as HOW, with its last stderr lines."
  (kiln--drain-stderr conn)
  (let ((tail (kiln--stderr-tail conn)))
    (setq kiln-last-death
          (format "[kiln] the server %s; the next command starts it again%s" how
                  (if (string-empty-p tail) ""
                    (concat ". Its last words on stderr:\n" tail))))
    (display-warning 'kiln kiln-last-death :error)))

(defun kiln--connection ()
  "The connection to a running, initialized server; start one if needed."
  (unless (kiln-running-p)
    (kiln--start))
  kiln--conn)

(defun kiln--start ()
  "Start the server and initialize it."
  (unless (and (consp kiln-command) (stringp (car kiln-command)))
    (user-error "[kiln] `kiln-command' must be a list: a program and its arguments"))
  (unless (executable-find (car kiln-command))
    (user-error "[kiln] cannot find the server program %S (customize `kiln-command')"
                (car kiln-command)))
  (let* ((default-directory (kiln--workspace))
         (api-key (kiln--api-key))
         (process-environment (if kiln-llm-aws-profile
                                  (cons (concat "AWS_PROFILE=" kiln-llm-aws-profile)
                                        process-environment)
                                process-environment))
         (conn
          (apply
           #'make-instance
           'jsonrpc-process-connection
           :name "kiln"
           :process (lambda ()
                      (make-process
                       :name "kiln" :command kiln-command
                       :connection-type 'pipe :coding 'utf-8-emacs-unix
                       :noquery t
                       ;; jsonrpc takes stderr from the buffer of this name.
                       :stderr (get-buffer-create "*kiln stderr*")))
           :notification-dispatcher #'kiln--dispatch
           :on-shutdown #'kiln--on-shutdown
           ;; The events log would hold the key `initialize' carries.
           (and api-key (kiln--no-events-log)))))
    (setq kiln--conn conn kiln--stopping nil)
    (condition-case err
        (let ((result
               (jsonrpc-request
                conn :initialize
                (list :processId (emacs-pid)
                      :clientInfo (list :name "kiln.el" :version (kiln--version))
                      :rootUri (kiln--path-uri default-directory)
                      :capabilities
                      (list :general (list :positionEncodings ["utf-8" "utf-16"]))
                      :initializationOptions (kiln--init-options api-key))
                :timeout kiln-start-timeout)))
          (let ((caps (plist-get result :capabilities)))
            (setq kiln--encoding (or (plist-get caps :positionEncoding) "utf-16")
                  kiln--methods (append (plist-get (plist-get caps :experimental) :methods)
                                        nil)))
          (jsonrpc-notify conn :initialized (make-hash-table))
          (setq kiln--session-id (or kiln--session-id
                                     (format "emacs-%d-%d" (emacs-pid)
                                             (truncate (float-time)))))
          conn)
      (error
       (kiln--drain-stderr conn)
       (let ((tail (kiln--stderr-tail conn)))
         (kiln--kill conn)
         (setq kiln--conn nil)
         (user-error "[kiln] the server did not start: %s%s"
                     (kiln--error-text err)
                     (if (string-empty-p tail) "" (concat "\n" tail))))))))

(defun kiln--no-events-log ()
  "The initargs that turn a jsonrpc connection's events log off."
  (if (cl-find '-events-buffer-config (eieio-class-slots 'jsonrpc-connection)
               :key #'eieio-slot-descriptor-name)
      '(:events-buffer-config (:size 0))
    '(:events-buffer-scrollback-size 0)))

(declare-function eieio-class-slots "eieio-core" (class))
(declare-function eieio-slot-descriptor-name "eieio-core" (slot))

(defun kiln--version ()
  "This package's version, from its header."
  (or (ignore-errors
        (require 'lisp-mnt)
        (let ((file (or (locate-library "kiln.el") (locate-library "kiln"))))
          (when file
            (with-temp-buffer
              (insert-file-contents (replace-regexp-in-string "\\.elc\\'" ".el" file))
              (lm-header "Version")))))
      "0.1.0"))

(declare-function lm-header "lisp-mnt" (header))

(defun kiln--kill (conn)
  "End CONN's process at once, quietly."
  (let ((kiln--stopping t))
    (ignore-errors (jsonrpc-shutdown conn))))

(defun kiln--error-text (err)
  "A sentence for ERR, a condition or a JSON-RPC error plist."
  (cond
   ((and (consp err) (eq (car err) 'jsonrpc-error))
    (or (alist-get 'jsonrpc-error-message (cdr err)) (format "%S" (cdr err))))
   ((and (consp err) (keywordp (car err)))
    (or (plist-get err :message) (format "%S" err)))
   ((consp err) (error-message-string err))
   (t (format "%s" err))))

(defun kiln--visible (text)
  "TEXT from code, a model or a program, with its control characters made visible.
A control character shows as ^X (DEL as ^?), other invisible or
reordering characters (bidi controls, zero-width ones) as <U+XXXX>;
newlines and tabs stay."
  (if (not (stringp text))
      (format "%s" text)
    (replace-regexp-in-string
     "[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
     (lambda (c)
       (let ((ch (aref c 0)))
         (cond ((< ch 32) (string ?^ (+ ch 64)))
               ((= ch 127) "^?")
               (t (format "<U+%04X>" ch)))))
     text t t)))

(defun kiln-shutdown ()
  "Stop the kiln server: `shutdown', then `exit'."
  (interactive)
  (when (kiln-running-p)
    (let ((conn kiln--conn)
          (kiln--stopping t))
      (setq kiln--conn nil)
      (ignore-errors (jsonrpc-request conn :shutdown nil :timeout 2))
      (ignore-errors (jsonrpc-notify conn :exit nil))
      (let ((proc (jsonrpc--process conn))
            (deadline (+ (float-time) 2)))
        (while (and (process-live-p proc) (< (float-time) deadline))
          (accept-process-output proc 0.05))
        (when (process-live-p proc)
          (delete-process proc))
        ;; Let the sentinel run while `kiln--stopping' holds.
        (accept-process-output nil 0.01)))))

(add-hook 'kill-emacs-hook #'kiln-shutdown)

(defun kiln-restart ()
  "Stop the kiln server and start it again (with the options as they are)."
  (interactive)
  (kiln-shutdown)
  (kiln--connection)
  (message "[kiln] the server runs"))

(defun kiln-supports-p (method)
  "Non-nil when the running server serves METHOD (a string)."
  (member method kiln--methods))

(defun kiln--async (method params on-result on-error &optional timeout)
  "Send METHOD with PARAMS; call ON-RESULT or ON-ERROR later.
Return the request's id.  TIMEOUT nil waits as long as it takes."
  (let ((conn (kiln--connection)))
    (jsonrpc-async-request conn method params
                           :success-fn on-result :error-fn on-error
                           :timeout timeout)
    ;; jsonrpc gives no other way to learn an async request's id: it is
    ;; the connection's counter, just incremented.
    (jsonrpc--next-request-id conn)))

(defun kiln--cancel-request (id)
  "Ask the server to cancel request ID."
  (when (and id (kiln-running-p))
    (jsonrpc-notify kiln--conn :$/cancelRequest (list :id id))))

(defun kiln--dispatch (_conn method params)
  "Route a notification METHOD with PARAMS."
  (pcase method
    ('run/output (kiln--on-output params))
    ('run/status (kiln--on-status params))
    ('run/artifact (kiln--on-artifact params))
    ('run/display (kiln--on-display params))
    ('intent/partial (kiln--on-partial params))
    ('intent/attempt (kiln--on-attempt params))
    ('intent/explanation (kiln--on-explanation params))
    ('$/progress (kiln--on-progress params))
    (_ nil)))

(defun kiln--on-progress (params)
  "Show a `$/progress' PARAMS in the mode line."
  (let ((value (plist-get params :value)))
    (kiln--set-status
     (pcase (plist-get value :kind)
       ("end" nil)
       (_ (or (plist-get value :message) kiln--status "working"))))))

(defun kiln--new-token ()
  "A fresh `workDoneToken'."
  (format "kiln-el-%d" (cl-incf kiln--token-count)))

(defvar kiln--mode-line-entry '(:eval (kiln--misc-status))
  "What `mode-line-misc-info' shows while kiln works.")

(defun kiln--misc-status ()
  "The status for `mode-line-misc-info', or nil.
nil in a buffer in `kiln-mode': its lighter says it already, and the
mode line would say it twice."
  (and kiln--status (not (bound-and-true-p kiln-mode))
       (concat " kiln:" kiln--status)))

(defcustom kiln-status-done-seconds 10
  "How long the mode line says how the last run ended (done, failed...)."
  :type 'number)

(defvar kiln--status-timer nil "The timer that clears a run's ending status.")

(defun kiln--set-status (status &optional linger)
  "Show STATUS (a string, or nil) in the mode line.
With LINGER, clear it after that many seconds unless it changed since."
  (when (timerp kiln--status-timer) (cancel-timer kiln--status-timer))
  (setq kiln--status-timer nil
        kiln--status (and status (kiln--visible status)))
  (when (and status linger)
    (let ((shown kiln--status))
      (setq kiln--status-timer
            (run-at-time linger nil (lambda ()
                                      (when (eq kiln--status shown)
                                        (setq kiln--status nil)
                                        (force-mode-line-update t)))))))
  (force-mode-line-update t))

(defun kiln--show-status ()
  "Add `kiln--status' to the mode line, once."
  (unless (member kiln--mode-line-entry mode-line-misc-info)
    (push kiln--mode-line-entry mode-line-misc-info)))

;;;; Buffers as documents

(defun kiln--language (&optional buffer)
  "The kiln language of BUFFER (default the current one), or nil."
  (with-current-buffer (or buffer (current-buffer))
    (cl-loop for (mode . lang) in kiln-languages
             when (derived-mode-p mode)
             return (if (and (eq mode 'sh-mode) (boundp 'sh-shell)
                             (not (memq (symbol-value 'sh-shell) '(bash sh dash))))
                        nil
                      lang))))

(defun kiln--language-or-error ()
  "The current buffer's kiln language, or a `user-error'."
  (or (kiln--language)
      (user-error "[kiln] no kiln language for %s (see `kiln-languages')" major-mode)))

(defun kiln--uri (&optional buffer)
  "A URI naming BUFFER's document."
  (with-current-buffer (or buffer (current-buffer))
    (if buffer-file-name
        (kiln--path-uri buffer-file-name)
      (concat "untitled:" (kiln--uri-escape (buffer-name))))))

(defun kiln--version-of (&optional buffer)
  "Return the version of the text of BUFFER, as a number."
  (buffer-chars-modified-tick buffer))

(defun kiln--text ()
  "The current buffer's whole text, without properties."
  (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max))))

(defun kiln--column (pos)
  "The server's column of POS on its line, in the negotiated encoding."
  (let ((text (buffer-substring-no-properties (save-excursion (goto-char pos)
                                                              (line-beginning-position))
                                              pos)))
    (if (equal kiln--encoding "utf-8")
        (string-bytes text)
      (kiln--utf16-length text))))

(defun kiln--utf16-length (text)
  "TEXT's length in UTF-16 code units."
  (cl-loop for c across text sum (if (> c #xFFFF) 2 1)))

(defun kiln--position (pos)
  "POS in the buffer as an LSP Position."
  (save-restriction
    (widen)
    (list :line (1- (line-number-at-pos pos t)) :character (kiln--column pos))))

(defun kiln--line-offset (line-text character)
  "How many characters of LINE-TEXT the server's CHARACTER covers."
  (if (equal kiln--encoding "utf-8")
      (let ((bytes (encode-coding-string line-text 'utf-8 t)))
        (length (decode-coding-string
                 (substring bytes 0 (min character (length bytes))) 'utf-8 t)))
    (let ((units 0) (i 0) (n (length line-text)))
      (while (and (< i n) (< units character))
        (setq units (+ units (if (> (aref line-text i) #xFFFF) 2 1))
              i (1+ i)))
      i)))

(defun kiln--line-starts (text)
  "Return a vector of the offsets of the lines of TEXT."
  (let ((starts (list 0)) (i 0))
    (while (setq i (string-search "\n" text i))
      (setq i (1+ i))
      (push i starts))
    (vconcat (nreverse starts))))

(defun kiln--text-offset (text starts pos)
  "Return the offset in TEXT of the LSP Position POS.
STARTS are the offsets of TEXT's lines."
  (let ((line (plist-get pos :line))
        (char (plist-get pos :character)))
    (if (>= line (length starts))
        (length text)
      (let* ((beg (aref starts line))
             (end (if (< (1+ line) (length starts))
                      (1- (aref starts (1+ line)))
                    (length text))))
        (+ beg (min (- end beg) (kiln--line-offset (substring text beg end) char)))))))

(defun kiln--buffer-pos (pos)
  "The buffer position of the LSP Position POS, clamped to the buffer."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (point-min))
      (let ((missing (forward-line (plist-get pos :line))))
        (if (or (> missing 0) (and (eobp) (not (bolp))))
            (point-max)
          (let ((eol (line-end-position)))
            (min eol (+ (point) (kiln--line-offset
                                 (buffer-substring-no-properties (point) eol)
                                 (plist-get pos :character))))))))))

;;;; Diagnostics and Flymake

(defun kiln--severity (d)
  "The Flymake type of the LSP diagnostic D."
  (pcase (plist-get d :severity)
    (1 :error) (2 :warning) (_ :note)))

(defun kiln--diag-text (d)
  "The message of diagnostic D, with its rule."
  (let ((code (plist-get d :code)))
    (format "%s%s" (plist-get d :message)
            (if code (format " [%s]" code) ""))))

(defvar-local kiln--flymake-serial 0
  "Counts this buffer's validations, so an old answer is dropped.")

(defun kiln-flymake (report-fn &rest _args)
  "Flymake backend: report the validator's diagnostics to REPORT-FN."
  (let ((lang (kiln--language))
        (buffer (current-buffer))
        (serial (cl-incf kiln--flymake-serial)))
    (if (not lang)
        (funcall report-fn nil)
      (condition-case err
          (kiln--async
           :snippet/validate (list :language lang :code (kiln--text))
           (lambda (result)
             (when (and (buffer-live-p buffer)
                        (= serial (buffer-local-value 'kiln--flymake-serial buffer)))
               (with-current-buffer buffer
                 (funcall report-fn (kiln--flymake-diags result)))))
           (lambda (e)
             (when (buffer-live-p buffer)
               (with-current-buffer buffer
                 (funcall report-fn :panic :explanation (kiln--error-text e)))))
           kiln-validate-timeout)
        (error (funcall report-fn :panic :explanation (kiln--error-text err)))))))

(defun kiln--flymake-diags (result)
  "Flymake diagnostics in the current buffer of a validation RESULT."
  (cl-loop for d across (or (plist-get result :diagnostics) [])
           for range = (plist-get d :range)
           for beg = (kiln--buffer-pos (plist-get range :start))
           for end = (kiln--buffer-pos (plist-get range :end))
           do (when (<= end beg)
                ;; A point: mark the character there, or the one before.
                (if (< beg (point-max)) (setq end (1+ beg))
                  (setq beg (max (point-min) (1- beg)))))
           collect (flymake-make-diagnostic (current-buffer) beg end
                                            (kiln--severity d)
                                            (kiln--diag-explained d))))

(defun kiln--diag-explained (d)
  "The message of diagnostic D with its rule and the rule's explanation.
The explanation (data.explanation) says why the rule exists, as VS
Code's Problems view shows it; control characters made visible."
  (let ((why (plist-get (plist-get d :data) :explanation)))
    (kiln--visible (if (and (stringp why) (not (string-empty-p why)))
                       (format "%s: %s" (kiln--diag-text d) why)
                     (kiln--diag-text d)))))

;;;###autoload
(defun kiln-validate ()
  "Validate the buffer now and show the verdict and the findings.
With `kiln-mode''s Flymake on, its diagnostics are refreshed too."
  (interactive)
  (let* ((lang (kiln--language-or-error))
         (result (jsonrpc-request (kiln--connection) :snippet/validate
                                  (list :language lang :code (kiln--text))
                                  :timeout kiln-validate-timeout))
         (diags (plist-get result :diagnostics)))
    (when (and (bound-and-true-p flymake-mode)
               (memq #'kiln-flymake flymake-diagnostic-functions))
      (flymake-start))
    (message "[kiln] verdict %s%s" (plist-get result :verdict)
             (if (> (length diags) 0)
                 (concat ": " (mapconcat #'kiln--diag-text diags "; "))
               ""))
    result))

;;;; Doctor

(defcustom kiln-doctor-buffer-name "*kiln-doctor*"
  "Name of the buffer `kiln-doctor' writes its report in."
  :type 'string)

(defun kiln--doctor-insert (report)
  "Insert REPORT, kiln/doctor's result: one aligned line an item, fixes below."
  (let* ((items (append (plist-get report :items) nil))
         (w (apply #'max 0 (mapcar (lambda (i) (length (kiln--visible (plist-get i :name))))
                                   items)))
         (pad (make-string (+ w 12) ?\s)))
    (dolist (it items)
      (let ((status (plist-get it :status)))
        (insert (kiln--visible (plist-get it :name))
                (make-string (- w (length (kiln--visible (plist-get it :name)))) ?\s)
                "  "
                (propertize (format "%-8s" status)
                            'face (pcase status
                                    ("ok" 'success)
                                    ("degraded" 'warning)
                                    (_ 'error)))
                "  " (kiln--visible (plist-get it :value)) "\n")
        (when (plist-get it :detail)
          (insert pad (kiln--visible (plist-get it :detail)) "\n"))
        (when (plist-get it :fix)
          (insert pad "fix: " (kiln--visible (plist-get it :fix)) "\n"))))
    (insert (pcase (plist-get report :exitCode)
              (0 "\nevery promise holds\n")
              (2 "\nkiln cannot run code on this machine: fix the missing items above\n")
              (_ "\nkiln runs code, with the degraded items above\n")))))

;;;###autoload
(defun kiln-doctor ()
  "Show what kiln can promise on this machine, each degraded item with its fix.
The report is the server's kiln/doctor (what `kiln doctor' prints): the
kernel, user namespaces, seccomp, Landlock, the sandbox, the workspace,
cgroups, Python and its modules, Node and the model endpoint."
  (interactive)
  (let* ((report (jsonrpc-request (kiln--connection) :kiln/doctor nil
                                  :timeout kiln-validate-timeout))
         (bad (cl-loop for item across (plist-get report :items)
                       unless (equal (plist-get item :status) "ok")
                       collect (kiln--visible (plist-get item :name)))))
    (with-current-buffer (get-buffer-create kiln-doctor-buffer-name)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (kiln--doctor-insert report))
      (special-mode)
      (goto-char (point-min)))
    (display-buffer kiln-doctor-buffer-name)
    (message "[kiln] doctor: %s"
             (if bad (concat "not ok: " (mapconcat #'identity bad ", ")) "every promise holds"))
    report))

;;;; Line diffs

(defun kiln--split-lines (text)
  "TEXT as a vector of lines, each with its newline (the last maybe not)."
  (let ((lines nil) (start 0) i)
    (while (setq i (string-search "\n" text start))
      (push (substring text start (1+ i)) lines)
      (setq start (1+ i)))
    (when (< start (length text))
      (push (substring text start) lines))
    (vconcat (nreverse lines))))

(defun kiln--diff (a b)
  "Line hunks from the vector of lines A to B.
Each is (A-START A-COUNT B-START B-COUNT), 0-based; hunks are
separated by at least one unchanged line."
  (let* ((na (length a)) (nb (length b))
         (pre 0) (suf 0))
    (while (and (< pre na) (< pre nb) (equal (aref a pre) (aref b pre)))
      (cl-incf pre))
    (while (and (< suf (- na pre)) (< suf (- nb pre))
                (equal (aref a (- na suf 1)) (aref b (- nb suf 1))))
      (cl-incf suf))
    (let* ((m (- na pre suf)) (n (- nb pre suf))
           (pairs (and (> m 0) (> n 0) (<= (* m n) 4000000)
                       (kiln--lcs a pre m b pre n)))
           (hunks nil) (ia pre) (ib pre))
      ;; Walk the matched pairs; the gaps between them are the hunks.
      (dolist (p (append pairs (list (cons (+ pre m) (+ pre n)))))
        (when (or (< ia (car p)) (< ib (cdr p)))
          (push (list ia (- (car p) ia) ib (- (cdr p) ib)) hunks))
        (setq ia (1+ (car p)) ib (1+ (cdr p))))
      (nreverse hunks))))

(defun kiln--lcs (a a0 m b b0 n)
  "Matched line pairs of a longest common subsequence.
Compares the M lines of A from A0 with the N lines of B from B0;
returns ((IA . IB) ...) in order."
  (let ((tab (make-vector (* (1+ m) (1+ n)) 0))
        (w (1+ n)))
    (cl-loop for i from (1- m) downto 0 do
             (cl-loop for j from (1- n) downto 0 do
                      (aset tab (+ (* i w) j)
                            (if (equal (aref a (+ a0 i)) (aref b (+ b0 j)))
                                (1+ (aref tab (+ (* (1+ i) w) (1+ j))))
                              (max (aref tab (+ (* (1+ i) w) j))
                                   (aref tab (+ (* i w) (1+ j))))))))
    (let ((i 0) (j 0) (pairs nil))
      (while (and (< i m) (< j n))
        (cond ((equal (aref a (+ a0 i)) (aref b (+ b0 j)))
               (push (cons (+ a0 i) (+ b0 j)) pairs)
               (cl-incf i) (cl-incf j))
              ((>= (aref tab (+ (* (1+ i) w) j)) (aref tab (+ (* i w) (1+ j))))
               (cl-incf i))
              (t (cl-incf j))))
      (nreverse pairs))))

(defun kiln--apply-edits (text edits)
  "TEXT with the LSP TextEdits EDITS (a sequence) applied."
  (let* ((starts (kiln--line-starts text))
         (spans (cl-loop for e across (vconcat edits)
                         for r = (plist-get e :range)
                         collect (list (kiln--text-offset text starts (plist-get r :start))
                                       (kiln--text-offset text starts (plist-get r :end))
                                       (or (plist-get e :newText) "")))))
    ;; From the end backwards, so earlier offsets stay valid.
    (dolist (s (sort spans (lambda (x y) (> (car x) (car y)))))
      (setq text (concat (substring text 0 (nth 0 s)) (nth 2 s) (substring text (nth 1 s)))))
    text))

(defun kiln--proposal-edits (proposal uri)
  "The TextEdits of PROPOSAL for the document URI, or nil."
  (let ((edit (plist-get proposal :edit)))
    (or (cl-loop for dc across (or (plist-get edit :documentChanges) [])
                 for doc = (plist-get dc :textDocument)
                 when (and (plist-get dc :edits)
                           (or (null doc) (equal (plist-get doc :uri) uri)))
                 return (plist-get dc :edits))
        (let ((hunks (plist-get proposal :hunks)))
          (and (> (length hunks) 0)
               (cl-map 'vector (lambda (h) (list :range (plist-get h :range)
                                                 :newText (plist-get h :newText)))
                       hunks))))))

;;;; Intents

(defvar kiln-intent-history nil "Intents given to `kiln-intent'.")

(defvar kiln--conversation-target nil
  "The buffer of the last intent, where `kiln-conversation-ask' asks next.")

(defvar kiln--intents nil
  "Intents in flight: a list of plists (:buffer :id :tick :snapshot :code).")

(defvar kiln-preview-buffer-name "*kiln-preview*"
  "The buffer the code streams into while the model writes.")

(defun kiln--intent-for (buffer)
  "The intent in flight for BUFFER, or nil."
  (cl-find buffer kiln--intents :key (lambda (r) (plist-get r :buffer))))

(defun kiln--target (beg end)
  "Return the target: (:range R) for the lines from BEG to END, else (:position P).
Without BEG, the code goes below the cursor's line, as whole lines."
  (save-restriction
    (widen)
    (if beg
        (let ((b (save-excursion (goto-char beg) (line-beginning-position)))
              (e (save-excursion
                   (goto-char end)
                   (if (and (bolp) (> (point) beg))
                       (point)
                     (min (point-max) (1+ (line-end-position)))))))
          (list :range (list :start (kiln--position b) :end (kiln--position e))))
      (list :position (kiln--position (save-excursion (forward-line 1) (point)))))))

;;;###autoload
(defun kiln-intent (intent &optional beg end)
  "Ask kiln for code that does INTENT, and review the proposal in the buffer.
The code replaces the lines from BEG to END (interactively, the
region's, when it is active), else it goes below the cursor's line.
It streams into the *kiln-preview* buffer as the model writes; then
each hunk is shown in the buffer, to accept or reject.  Return the
request (a plist)."
  (interactive (list (read-string "kiln intent: " nil 'kiln-intent-history)
                     (and (use-region-p) (region-beginning))
                     (and (use-region-p) (region-end))))
  (when (string-empty-p (string-trim intent))
    (user-error "[kiln] say what the code should do"))
  (let* ((buffer (current-buffer))
         (lang (or (kiln--language) "python"))
         (token (kiln--new-token))
         (req (list :buffer buffer :tick (kiln--version-of) :snapshot (kiln--text)
                    :code "" :language lang :token token
                    ;; Where the code will go: the streaming preview shows there.
                    :where (copy-marker
                            (save-excursion
                              (if beg (progn (goto-char beg) (line-beginning-position))
                                (forward-line 1) (point))))))
         (params (append
                  (list :intent intent
                        :textDocument (list :uri (kiln--uri) :languageId lang
                                            :version (kiln--version-of) :text (kiln--text))
                        :language lang
                        :workDoneToken token)
                  (kiln--target beg end))))
    (when (kiln--intent-for buffer)
      (user-error "[kiln] an intent is already on its way for this buffer (M-x kiln-cancel)"))
    (kiln--connection)
    (setq params (append params (list :sessionId kiln--session-id)))
    (kiln--conv (format "* intent (%s): %s" (buffer-name) intent) 'kiln-conversation-heading)
    (setq kiln--conversation-target buffer)
    (kiln--show-status)
    (kiln--set-status "thinking")
    (let ((id (kiln--async :intent/run params
                           (lambda (result) (kiln--intent-done req nil result))
                           (lambda (err) (kiln--intent-done req err nil)))))
      (setq req (plist-put req :id id))
      (push req kiln--intents)
      req)))

(defcustom kiln-preview-in-buffer t
  "Whether the code streams into the buffer, at its place, as the model writes.
Shown as an overlay (nothing is written) until the proposal comes and
its review starts; the *kiln-preview* buffer streams it too."
  :type 'boolean)

(defconst kiln--preview-max-chars 20000
  "The most characters of streamed code the in-buffer preview shows.")

(defun kiln--preview-in-buffer (req code)
  "Show CODE, streamed so far for REQ, at its place in REQ's buffer."
  (let ((buffer (plist-get req :buffer))
        (where (plist-get req :where)))
    (when (and kiln-preview-in-buffer (buffer-live-p buffer) (markerp where)
               (eq (marker-buffer where) buffer))
      (with-current-buffer buffer
        (let ((ov (or (plist-get req :preview)
                      (let ((o (make-overlay where where nil t nil)))
                        (overlay-put o 'kiln-preview t)
                        (overlay-put o 'priority 100)
                        (plist-put req :preview o)
                        o)))
              (shown (if (> (length code) kiln--preview-max-chars)
                         (concat (substring code 0 kiln--preview-max-chars) "...\n")
                       code)))
          (overlay-put ov 'before-string
                       (concat (propertize "kiln: the model is writing (M-x kiln-cancel stops it)\n"
                                           'face 'kiln-hunk-header)
                               (propertize (kiln--visible shown) 'face 'kiln-hunk-added)
                               (if (or (string-empty-p shown) (string-suffix-p "\n" shown))
                                   "" "\n"))))))))

(defun kiln--end-preview (req)
  "Take REQ's in-buffer preview away."
  (let ((ov (plist-get req :preview)))
    (when (overlayp ov) (delete-overlay ov)))
  (when (markerp (plist-get req :where))
    (set-marker (plist-get req :where) nil)))

(defun kiln--intent-done (req err result)
  "The answer to intent REQ: ERR, or a proposal RESULT."
  (when (memq req kiln--intents)
    (kiln--end-preview req)
    (setq kiln--intents (delq req kiln--intents))
    (kiln--set-status nil)
    (let ((buffer (plist-get req :buffer)))
      (if err
          (kiln--conv (concat "  [intent failed: " (kiln--error-text err) "]") 'kiln-failure)
        (kiln--conv-proposal result))
      (cond
       (err (message "[kiln] intent failed: %s" (kiln--error-text err)))
       ((not (buffer-live-p buffer))
        (message "[kiln] the proposal's buffer is gone"))
       (t (with-current-buffer buffer
            (kiln--start-review result (plist-get req :snapshot) (plist-get req :tick))))))))

(defun kiln--on-partial (params)
  "Stream the code of `intent/partial' PARAMS into the preview buffer."
  (let ((req (or (cl-find (plist-get params :requestId) kiln--intents
                          :key (lambda (r) (plist-get r :id)))
                 (car kiln--intents)))
        (text (plist-get params :text)))
    (when (and req (stringp text))
      (let ((code (if (eq (plist-get params :reset) t)
                      text
                    (concat (plist-get req :code) text))))
        (plist-put req :code code)
        (kiln--preview-in-buffer req code)
        (let ((buf (get-buffer-create kiln-preview-buffer-name)))
          (with-current-buffer buf
            (let ((inhibit-read-only t))
              (erase-buffer)
              (insert code))
            (setq buffer-read-only t))
          (unless (get-buffer-window buf t)
            (display-buffer buf '((display-buffer-below-selected)
                                  (window-height . 10)
                                  (inhibit-same-window . t)))))))))

(defun kiln--close-preview ()
  "Close the preview buffer's window, if it has one."
  (let* ((buf (get-buffer kiln-preview-buffer-name))
         (win (and buf (get-buffer-window buf t))))
    (when (and win (not (one-window-p t)))
      (ignore-errors (delete-window win)))))

;;;; Review of a proposal

(defvar-local kiln--review nil
  "The proposal under review here: a plist (:proposal :hunks :tick :group).")

(defvar-local kiln--runnable nil
  "What `kiln-run' approves here: (:proposal :tick :version :snapshot :hunks).
:snapshot is the text the proposal was made for; a repaired proposal
applies to it too.  :hunks are the review's, whose decisions say
whether the buffer holds the proposal (see `kiln--whole-p').")

(defun kiln--start-review (proposal snapshot tick &optional base version)
  "Show PROPOSAL, made for SNAPSHOT of the current buffer at version TICK.
The hunks go from BASE (default SNAPSHOT), the buffer's text at TICK,
to the proposed text; VERSION (default TICK) is the version of the
request, what `intent/approve' sends while the buffer holds only what
the review wrote.  A repaired proposal is reviewed from the buffer as
the first review left it (see `kiln--follow-repair')."
  (kiln--close-preview)
  (when kiln--review (kiln--end-review nil))
  (let* ((edits (kiln--proposal-edits proposal (kiln--uri)))
         (verdict (plist-get proposal :verdict)))
    (cond
     ((null edits)
      (message "[kiln] the proposal carries no edit"))
     ((/= (kiln--version-of) tick)
      ;; Its places are in a text that is no longer here.
      (message "[kiln] the buffer changed while the model wrote: the proposal was not shown; run kiln-intent again"))
     (t
      (let* ((new (kiln--apply-edits snapshot edits))
             (old-lines (kiln--split-lines (or base snapshot)))
             (new-lines (kiln--split-lines new))
             (first-line (cl-loop for e across (vconcat edits)
                                  minimize (plist-get (plist-get (plist-get e :range) :start)
                                                      :line)))
             (hunks (cl-loop for (a0 ac b0 bc) in (kiln--diff old-lines new-lines)
                             collect (list :old (mapconcat #'identity
                                                           (cl-subseq old-lines a0 (+ a0 ac)) "")
                                           :new (mapconcat #'identity
                                                           (cl-subseq new-lines b0 (+ b0 bc)) "")
                                           :a-start a0 :b-start b0 :b-count bc
                                           :status 'pending :diags nil))))
        ;; The validator's diagnostics count lines in the code, which
        ;; starts where the first edit starts; each goes with its hunk.
        (cl-loop for d across (or (plist-get proposal :diagnostics) [])
                 for line = (+ first-line (plist-get (plist-get (plist-get d :range) :start)
                                                     :line))
                 for h = (cl-find-if (lambda (h) (and (>= line (plist-get h :b-start))
                                                      (< line (+ (plist-get h :b-start)
                                                                 (max 1 (plist-get h :b-count))))))
                                     hunks)
                 do (when h
                      (plist-put h :diags (append (plist-get h :diags)
                                                  (list (cons (- line (plist-get h :b-start)) d))))))
        (setq kiln--runnable (list :proposal proposal :tick tick :version (or version tick)
                                   :snapshot snapshot :hunks hunks))
        (if (null hunks)
            (message "[kiln] the proposal changes nothing")
          (setq kiln--review (list :proposal proposal :hunks hunks :tick tick
                                   :group nil :accepted 0))
          (kiln--draw-review)
          (message "[kiln] proposal %s: %d hunk%s, verdict %s%s"
                   (plist-get proposal :proposalId) (length hunks)
                   (if (= (length hunks) 1) "" "s") verdict
                   (if (equal verdict "deny") " (kiln-run will refuse it)" ""))))))))

(defun kiln--follow-repair (buffer proposal)
  "Make BUFFER's review follow PROPOSAL, the repair of the one that ran.
It comes with the `repaired' attempt of `intent/approve' (or its answer
when the repair needs approval), so that what is shown, and what
`kiln-accept-hunk' writes, is the code that runs next.  It was made for
the same text as the first proposal, so its edit applies to the same
snapshot; the new review goes from the buffer as it is now (the snapshot
while the first review was open, or with its accepted hunks written)."
  (when (and (buffer-live-p buffer) (listp proposal) (plist-get proposal :proposalId))
    (with-current-buffer buffer
      (let* ((rec kiln--runnable)
             (old (plist-get (plist-get rec :proposal) :proposalId))
             (new (plist-get proposal :proposalId)))
        (when (and rec (not (equal old new)))
          ;; What `kiln-run' approves from now on.
          (plist-put rec :proposal proposal)
          (if (/= (kiln--version-of) (plist-get rec :tick))
              (message "[kiln] proposal %s was repaired as %s, but the buffer changed since: the repaired code is not shown (run kiln-intent again)"
                       old new)
            (message "[kiln] proposal %s was repaired: the review now shows %s, the code that runs"
                     old new)
            (kiln--start-review proposal (plist-get rec :snapshot) (plist-get rec :tick)
                                (kiln--text) (plist-get rec :version))))))))

(defun kiln--key-hint ()
  "How to accept and reject, as the user's keys say."
  (let ((acc (where-is-internal #'kiln-accept-hunk nil t))
        (rej (where-is-internal #'kiln-reject-hunk nil t)))
    (if (and acc rej)
        (format "%s accept, %s reject" (key-description acc) (key-description rej))
      "M-x kiln-accept-hunk / kiln-reject-hunk")))

(defun kiln--hunk-bounds (h)
  "Buffer positions (BEG . END) of hunk H's old lines, from the snapshot's lines."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (point-min))
      (forward-line (plist-get h :a-start))
      (let ((beg (point)))
        (cons beg (+ beg (length (plist-get h :old))))))))

(defun kiln--draw-review ()
  "Put one overlay per hunk of the review on the buffer."
  (let* ((hunks (plist-get kiln--review :hunks))
         (n (length hunks))
         (hint (kiln--key-hint))
         (verdict (plist-get (plist-get kiln--review :proposal) :verdict)))
    (cl-loop for h in hunks for i from 1 do
             (let* ((bounds (kiln--hunk-bounds h))
                    (ov (make-overlay (car bounds) (cdr bounds) nil nil nil))
                    (old (plist-get h :old))
                    (new (plist-get h :new))
                    (header (concat
                             (propertize (format "kiln hunk %d/%d (verdict %s): %s\n"
                                                 i n verdict hint)
                                         'face 'kiln-hunk-header)
                             (mapconcat
                              (lambda (ld)
                                (propertize
                                 (format "  %s proposed line %d: %s\n"
                                         (if (eq (kiln--severity (cdr ld)) :error) "error" "warning")
                                         (1+ (car ld)) (kiln--diag-text (cdr ld)))
                                 'face (if (eq (kiln--severity (cdr ld)) :error)
                                           'error 'warning)))
                              (plist-get h :diags) "")))
                    (added (propertize (if (and (> (length old) 0)
                                                (not (string-suffix-p "\n" old))
                                                (> (length new) 0))
                                           (concat "\n" new)
                                         new)
                                       'face 'kiln-hunk-added)))
               (overlay-put ov 'kiln-hunk h)
               (overlay-put ov 'priority 100)
               (overlay-put ov 'before-string
                            (if (= (length old) 0) (concat header added) header))
               (when (> (length old) 0)
                 (overlay-put ov 'face 'kiln-hunk-removed)
                 (overlay-put ov 'after-string added))
               (plist-put h :overlay ov)))))

(defun kiln--pending (review)
  "REVIEW's hunks still to decide."
  (cl-remove-if-not (lambda (h) (eq (plist-get h :status) 'pending))
                    (plist-get review :hunks)))

(defun kiln--end-review (why)
  "End the review here, saying WHY when non-nil."
  (when kiln--review
    (dolist (h (plist-get kiln--review :hunks))
      (when (overlayp (plist-get h :overlay))
        (delete-overlay (plist-get h :overlay))))
    (let ((group (plist-get kiln--review :group)))
      (when group (accept-change-group group)))
    (setq kiln--review nil)
    (when why (message "[kiln] %s" why))))

(defun kiln--review-or-error ()
  "The review here, or a `user-error'."
  (or kiln--review (user-error "[kiln] no proposal under review in this buffer")))

(defun kiln--hunk-at-point ()
  "The pending hunk at point, else the first pending one."
  (let* ((pending (kiln--pending kiln--review))
         (line-beg (line-beginning-position))
         (line-end (line-end-position)))
    (or (cl-find-if (lambda (h)
                      (let ((ov (plist-get h :overlay)))
                        (and ov (<= (overlay-start ov) line-end)
                             (if (= (overlay-start ov) (overlay-end ov))
                                 (>= (overlay-start ov) line-beg)
                               (> (overlay-end ov) line-beg)))))
                    pending)
        (car pending))))

(defun kiln--stale-p ()
  "Non-nil when the buffer is not as the review left it."
  (/= (kiln--version-of) (plist-get kiln--review :tick)))

(defun kiln--refuse-stale ()
  "Say the buffer changed, end the review and signal a `user-error'."
  (kiln--end-review nil)
  (setq kiln--runnable nil)
  (user-error "[kiln] the buffer changed since the request: the proposal was not applied (run kiln-intent again)"))

(defun kiln--write-hunk (h)
  "Write hunk H into the buffer, as part of the review's one undo step."
  (let* ((ov (plist-get h :overlay))
         (beg (overlay-start ov))
         (end (overlay-end ov)))
    (unless (equal (buffer-substring-no-properties beg end) (plist-get h :old))
      (kiln--refuse-stale))
    (let ((group (plist-get kiln--review :group)))
      (unless group
        (setq group (prepare-change-group))
        (activate-change-group group)
        (plist-put kiln--review :group group))
      (save-excursion
        (goto-char beg)
        (delete-region beg end)
        (insert (plist-get h :new)))
      ;; Every accepted hunk of this proposal joins the first one's undo
      ;; step, so one undo takes the whole proposal back.
      (undo-amalgamate-change-group group))
    (delete-overlay ov)
    (plist-put h :status 'accepted)
    (plist-put kiln--review :accepted (1+ (plist-get kiln--review :accepted)))))

(defun kiln--after-decision ()
  "Update the review after a hunk was decided; end it when none is left."
  (plist-put kiln--review :tick (kiln--version-of))
  (when kiln--runnable
    (plist-put kiln--runnable :tick (kiln--version-of)))
  (unless (kiln--pending kiln--review)
    (let ((accepted (plist-get kiln--review :accepted))
          (n (length (plist-get kiln--review :hunks))))
      (when (= accepted 0)
        ;; Rejected whole: nothing is left for `kiln-run' to approve.
        (setq kiln--runnable nil))
      (kiln--end-review (format "review done: %d of %d hunks accepted" accepted n)))))

(defun kiln--hunk-numbers (rec status)
  "The numbers (strings, from 1) of the hunks of REC whose status is STATUS."
  (cl-loop for h in (plist-get rec :hunks) for i from 1
           when (eq (plist-get h :status) status)
           collect (number-to-string i)))

(defun kiln--whole-p (rec)
  "Non-nil when `kiln-run' may approve REC's proposal as the model wrote it.
That is while no hunk of its review was rejected and either every hunk
is still pending (the proposal runs as proposed) or every one was
accepted (the buffer holds it).  Otherwise `intent/approve' would run
code the buffer does not hold: a rejected hunk, or one still pending."
  (and (null (kiln--hunk-numbers rec 'rejected))
       (or (null (kiln--hunk-numbers rec 'accepted))
           (null (kiln--hunk-numbers rec 'pending)))))

(defun kiln--kept-note (rec)
  "What the review of REC kept of its proposal, as a phrase, or nil.
nil unless some of its hunks were accepted and others were not."
  (let ((accepted (kiln--hunk-numbers rec 'accepted))
        (rejected (kiln--hunk-numbers rec 'rejected))
        (pending (kiln--hunk-numbers rec 'pending)))
    (when (and accepted (or rejected pending))
      (format "proposal %s: %s" (plist-get (plist-get rec :proposal) :proposalId)
              (string-join
               (delq nil (list (format "hunk%s %s accepted" (if (cdr accepted) "s" "")
                                       (string-join accepted ", "))
                               (and rejected (concat (string-join rejected ", ") " rejected"))
                               (and pending (concat (string-join pending ", ")
                                                    " still pending, not run"))))
               "; ")))))

;;;###autoload
(defun kiln-accept-hunk ()
  "Write the proposed hunk at point (or the first one) into the buffer."
  (interactive)
  (kiln--review-or-error)
  (when (kiln--stale-p) (kiln--refuse-stale))
  (let ((h (kiln--hunk-at-point)))
    (kiln--write-hunk h)
    (kiln--after-decision)))

;;;###autoload
(defun kiln-reject-hunk ()
  "Drop the proposed hunk at point (or the first one)."
  (interactive)
  (kiln--review-or-error)
  (let ((h (kiln--hunk-at-point)))
    (delete-overlay (plist-get h :overlay))
    (plist-put h :status 'rejected)
    (kiln--after-decision)))

;;;###autoload
(defun kiln-accept-all ()
  "Write every hunk still proposed into the buffer, as one undo step."
  (interactive)
  (kiln--review-or-error)
  (when (kiln--stale-p) (kiln--refuse-stale))
  (dolist (h (kiln--pending kiln--review))
    (kiln--write-hunk h))
  (kiln--after-decision))

;;;###autoload
(defun kiln-reject-all ()
  "Drop every hunk still proposed."
  (interactive)
  (kiln--review-or-error)
  (dolist (h (kiln--pending kiln--review))
    (delete-overlay (plist-get h :overlay))
    (plist-put h :status 'rejected))
  (kiln--after-decision))

(defun kiln-next-hunk (&optional backward)
  "Move to the next proposed hunk (the previous one with BACKWARD)."
  (interactive "P")
  (kiln--review-or-error)
  (let* ((starts (sort (mapcar (lambda (h) (overlay-start (plist-get h :overlay)))
                               (kiln--pending kiln--review))
                       #'<))
         (target (if backward
                     (or (car (last (cl-remove-if-not (lambda (p) (< p (line-beginning-position)))
                                                      starts)))
                         (car (last starts)))
                   (or (cl-find-if (lambda (p) (> p (line-end-position))) starts)
                       (car starts)))))
    (when target (goto-char target))))

(defun kiln-previous-hunk ()
  "Move to the previous proposed hunk."
  (interactive)
  (kiln-next-hunk t))

(defun kiln--proposed-text ()
  "The buffer's text with every pending hunk of the review applied."
  (let ((text (kiln--text))
        (base (save-restriction (widen) (point-min))))
    ;; From the end backwards, so earlier positions stay valid.
    (dolist (h (sort (copy-sequence (kiln--pending kiln--review))
                     (lambda (x y) (> (overlay-start (plist-get x :overlay))
                                      (overlay-start (plist-get y :overlay))))))
      (let ((beg (- (overlay-start (plist-get h :overlay)) base))
            (end (- (overlay-end (plist-get h :overlay)) base)))
        (setq text (concat (substring text 0 beg) (plist-get h :new) (substring text end)))))
    text))

(defvar ediff-quit-hook)
(declare-function ediff-buffers "ediff" (buffer-a buffer-b &optional startup-hooks job-name))

;;;###autoload
(defun kiln-ediff ()
  "Review the whole proposal with `ediff': the buffer against the proposed text.
Copy the differences you want into the buffer with ediff's own
commands; when ediff quits, the review ends."
  (interactive)
  (kiln--review-or-error)
  (when (kiln--stale-p) (kiln--refuse-stale))
  (let* ((buffer (current-buffer))
         (mode major-mode)
         (text (kiln--proposed-text))
         (proposed (get-buffer-create
                    (format "*kiln proposal %s*"
                            (plist-get (plist-get kiln--review :proposal) :proposalId)))))
    (with-current-buffer proposed
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert text))
      (ignore-errors (funcall mode))
      (set-buffer-modified-p nil))
    (require 'ediff)
    (ediff-buffers buffer proposed
                   (list (lambda ()
                           (add-hook 'ediff-quit-hook
                                     (lambda ()
                                       (when (buffer-live-p buffer)
                                         (with-current-buffer buffer
                                           (kiln--end-review "the ediff review ended")))
                                       (when (buffer-live-p proposed)
                                         (kill-buffer proposed)))
                                     nil t))))
    proposed))

;;;; The conversation

(defcustom kiln-conversation-buffer-name "*kiln-conversation*"
  "The buffer that keeps every intent, proposal, repair and run, in order."
  :type 'string)

(defcustom kiln-conversation-max-chars 2000000
  "The most characters the conversation buffer keeps; the oldest go first."
  :type 'integer)

(defcustom kiln-conversation-max-output 100000
  "The most characters of one run's output copied into the conversation.
The whole output stays in the output buffer until the next run."
  :type 'integer)

(defface kiln-conversation-heading '((t :inherit (font-lock-function-name-face bold)))
  "Face of an intent's heading in the conversation.")

(defface kiln-conversation-subheading '((t :inherit font-lock-keyword-face))
  "Face of a proposal's, an attempt's or a run's heading in the conversation.")

(defface kiln-code '((t :inherit fixed-pitch))
  "Face of code in the conversation.")

(defvar kiln-conversation-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map special-mode-map)
    (define-key map (kbd "i") #'kiln-conversation-ask)
    (define-key map (kbd "RET") #'kiln-conversation-ask)
    (define-key map (kbd "n") #'kiln-conversation-next)
    (define-key map (kbd "p") #'kiln-conversation-previous)
    map)
  "Keymap of `kiln-conversation-mode'.")

(define-derived-mode kiln-conversation-mode special-mode "kiln-conversation"
  "Mode of the conversation buffer, a record of every turn with kiln.
Each intent, what the model said and wrote with its verdict, each
repair, each run's output, displays, workspace changes and ledger.
\\<kiln-conversation-mode-map>\\[kiln-conversation-next] and \
\\[kiln-conversation-previous] move between turns; \\[kiln-conversation-ask] asks
for more in the buffer of the last intent."
  (setq-local truncate-lines nil)
  (setq-local outline-regexp "\\*+ ")
  (buffer-disable-undo))

(defun kiln--conversation-buffer ()
  "The conversation buffer, made if needed."
  (or (get-buffer kiln-conversation-buffer-name)
      (with-current-buffer (get-buffer-create kiln-conversation-buffer-name)
        (kiln-conversation-mode)
        (current-buffer))))

(defmacro kiln--with-conversation (&rest body)
  "Run BODY at the end of the conversation buffer, writable, then cap it."
  (declare (indent 0) (debug t))
  `(kiln--at-end (kiln--conversation-buffer) (lambda () ,@body) #'kiln--cap-conversation))

(defun kiln--cap-conversation ()
  "Cap the conversation: drop what is oldest past the cap.
The cap is `kiln-conversation-max-chars'."
  (when (> (buffer-size) kiln-conversation-max-chars)
    (save-excursion
      (goto-char (- (point-max) kiln-conversation-max-chars))
      ;; At a turn's start, when there is one, else at a line's.
      (unless (re-search-forward "^\\* " nil t) (forward-line 1))
      (goto-char (line-beginning-position))
      (delete-region (point-min) (point))
      (goto-char (point-min))
      (insert (propertize (format "[older turns dropped: over kiln-conversation-max-chars, %d]\n"
                                  kiln-conversation-max-chars)
                          'face 'kiln-note)))))

(defun kiln--conv (text &optional face)
  "Append TEXT (made visible) as lines of the conversation, in FACE."
  (let ((text (kiln--visible text)))
    (kiln--with-conversation
      (unless (bolp) (insert "\n"))
      (insert (propertize (if (string-suffix-p "\n" text) text (concat text "\n"))
                          'face face)))))

(defun kiln--conv-code (code)
  "Append CODE to the conversation, each line behind a bar."
  (kiln--conv (mapconcat (lambda (l) (concat "  | " l))
                         (split-string (string-remove-suffix "\n" code) "\n")
                         "\n")
              'kiln-code))

(defun kiln--conv-proposal (proposal &optional what)
  "Append PROPOSAL (an `intent/run' result) to the conversation.
WHAT names it (default \"proposal\")."
  (let ((expl (plist-get proposal :explanation))
        (usage (plist-get proposal :usage)))
    (when (and (stringp expl) (not (string-empty-p (string-trim expl))))
      (kiln--conv (if what "*** the model says" "** the model says")
                  'kiln-conversation-subheading)
      (kiln--conv (string-trim expl) 'kiln-explanation))
    (kiln--conv (format "%s %s %s, verdict %s%s" (if what "***" "**") (or what "proposal")
                        (plist-get proposal :proposalId) (plist-get proposal :verdict)
                        (if (eq (plist-get proposal :cached) t) " (from the answer cache)" ""))
                'kiln-conversation-subheading)
    (when (stringp (plist-get proposal :code))
      (kiln--conv-code (plist-get proposal :code)))
    (cl-loop for d across (or (plist-get proposal :diagnostics) [])
             do (kiln--conv (format "  %s line %s: %s"
                                    (if (eq (kiln--severity d) :error) "error" "warning")
                                    (1+ (plist-get (plist-get (plist-get d :range) :start) :line))
                                    (kiln--diag-text d))
                            (if (eq (kiln--severity d) :error) 'error 'warning)))
    (when (listp usage)
      (when (or (plist-get usage :promptTokens) (plist-get usage :completionTokens))
        (kiln--conv (format "  tokens: %s prompt, %s completion"
                            (or (plist-get usage :promptTokens) "?")
                            (or (plist-get usage :completionTokens) "?"))
                    'kiln-note)))))

(defun kiln--ledger (result usage)
  "The ledger line of RESULT (a `snippet/run' result), with USAGE's tokens."
  (let ((parts nil)
        (peak (or (plist-get (plist-get result :cgroup) :memoryPeakBytes)
                  (and (numberp (plist-get result :maxRssKb))
                       (* 1024 (plist-get result :maxRssKb))))))
    (when (numberp (plist-get result :durationMs))
      (push (format "%d ms" (round (plist-get result :durationMs))) parts))
    (when (numberp (plist-get result :cpuMs))
      (push (format "CPU %d ms" (round (plist-get result :cpuMs))) parts))
    (when (numberp peak)
      (push (format "peak memory %s" (file-size-human-readable peak 'iec " ")) parts))
    (when (and (listp usage) (or (plist-get usage :promptTokens) (plist-get usage :completionTokens)))
      (push (format "tokens %s prompt + %s completion"
                    (or (plist-get usage :promptTokens) "?")
                    (or (plist-get usage :completionTokens) "?"))
            parts))
    (and parts (concat "  ledger: " (string-join (nreverse parts) ", ")))))

(defun kiln--conv-run (run err result)
  "Append RUN, ended with ERR or RESULT, to the conversation.
Its output as the output buffer shows it (faces, images and buttons
kept; at most `kiln-conversation-max-output' characters), then its
ledger: duration, CPU, peak memory, and the proposal's tokens."
  (let* ((out (kiln--output-buffer))
         (copy (with-current-buffer out
                 (save-excursion
                   (goto-char (point-min))
                   (forward-line 1)
                   (let* ((beg (point))
                          (end (min (point-max) (+ beg kiln-conversation-max-output))))
                     (cons (buffer-substring beg end) (- (point-max) end))))))
         (last (if (plist-member result :attempts) (plist-get result :result) result)))
    (kiln--conv "*** output" 'kiln-conversation-subheading)
    (kiln--with-conversation
      (unless (bolp) (insert "\n"))
      (insert (car copy))
      (unless (bolp) (insert "\n"))
      (when (> (cdr copy) 0)
        (insert (propertize (format "[... %d more characters in %s]\n" (cdr copy)
                                    kiln-output-buffer-name)
                            'face 'kiln-note))))
    (let ((ledger (and (not err) (kiln--ledger last (plist-get run :usage)))))
      (when ledger (kiln--conv ledger 'kiln-note)))))

;;;###autoload
(defun kiln-conversation ()
  "Show the conversation: every intent with what the model said and wrote.
Each turn has the intent, the model's explanation, the code with its
verdict and diagnostics, each repair, the run's output (displays as
images or links, workspace changes with their buttons) and its ledger."
  (interactive)
  (pop-to-buffer (kiln--conversation-buffer)))

(defun kiln-conversation-ask (intent)
  "Ask for INTENT in the buffer of the conversation's last intent.
The code goes at that buffer's point, as `kiln-intent' puts it, and
its review is shown there; the conversation records it like any other."
  (interactive
   (progn
     (unless (buffer-live-p kiln--conversation-target)
       (user-error "[kiln] no buffer to ask in: use M-x kiln-intent in one first"))
     (list (read-string (format "kiln intent (in %s): " (buffer-name kiln--conversation-target))
                        nil 'kiln-intent-history))))
  (unless (buffer-live-p kiln--conversation-target)
    (user-error "[kiln] no buffer to ask in: use M-x kiln-intent in one first"))
  (let ((buffer kiln--conversation-target))
    (display-buffer buffer '(nil (inhibit-same-window . t)))
    (with-current-buffer buffer
      (kiln-intent intent))))

(defun kiln-conversation-next (&optional backward)
  "Move to the next turn of the conversation (the previous with BACKWARD)."
  (interactive "P")
  (if backward
      (progn (beginning-of-line)
             (re-search-backward "^\\* " nil 'move))
    (end-of-line)
    (if (re-search-forward "^\\* " nil 'move) (beginning-of-line))))

(defun kiln-conversation-previous ()
  "Move to the previous turn of the conversation."
  (interactive)
  (kiln-conversation-next t))

;;;; Runs and the output buffer

(defvar kiln--run nil
  "The run in flight, or nil.
A plist (:id :kind :buffer :attempts :artifacts :run-id :queued); :queued
is its place in the server's queue while it waits for a sandbox slot.")

(defvar kiln-last-run nil
  "The last run that ended: (:result R :error E :artifacts A).")

(defvar kiln-output-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map special-mode-map)
    (define-key map (kbd "C-c C-c") #'kiln-cancel)
    map)
  "Keymap of `kiln-output-mode'.")

(define-derived-mode kiln-output-mode special-mode "kiln-output"
  "Mode of the buffer kiln's runs stream into."
  (setq-local truncate-lines nil)
  (buffer-disable-undo))

(defvar kiln--output-open nil
  "The stream whose line is still open in the output buffer, or nil.")

(defun kiln--output-buffer ()
  "The output buffer, made if needed."
  (let ((buf (get-buffer kiln-output-buffer-name)))
    (or buf
        (with-current-buffer (get-buffer-create kiln-output-buffer-name)
          (kiln-output-mode)
          (current-buffer)))))

(defun kiln--at-end (buffer fn &optional after)
  "Call FN at the end of BUFFER, writable, then AFTER (if given) there.
Windows that showed the buffer's end keep showing it."
  (with-current-buffer buffer
    (let ((inhibit-read-only t)
          (follow (mapcar (lambda (w) (cons w (= (window-point w) (point-max))))
                          (get-buffer-window-list (current-buffer) nil t))))
      (save-excursion
        (goto-char (point-max))
        (funcall fn))
      (when after (funcall after))
      (dolist (wf follow)
        (when (cdr wf) (set-window-point (car wf) (point-max)))))))

(defmacro kiln--with-output (&rest body)
  "Run BODY at the end of the output buffer, writable."
  (declare (indent 0) (debug t))
  `(kiln--at-end (kiln--output-buffer) (lambda () ,@body)))

(defun kiln--output-append (stream text)
  "Append TEXT of STREAM (`stdout', `stderr' or `explain') to the output."
  (kiln--with-output
    (when (and kiln--output-open (not (eq kiln--output-open stream)))
      ;; Another stream's line is open: never splice two into one line.
      (insert "\n"))
    (insert (propertize text 'face (pcase stream
                                     ('stderr 'kiln-stderr)
                                     ('explain 'kiln-explanation)
                                     (_ 'kiln-stdout))
                        'kiln-stream stream))
    (setq kiln--output-open (and (not (string-suffix-p "\n" text))
                                 (> (length text) 0) stream))))

(defun kiln--output-note (text &optional face)
  "Put TEXT on a line of its own in the output, in FACE."
  (kiln--with-output
    (when kiln--output-open (insert "\n"))
    (setq kiln--output-open nil)
    (insert (propertize (concat text "\n") 'face (or face 'kiln-note)))))

(defun kiln--output-start (header)
  "Clear the output buffer for a new run named HEADER and show it."
  (let ((buf (kiln--output-buffer)))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)))
    (setq kiln--output-open nil)
    (kiln--output-note (concat "kiln run: " header) 'kiln-hunk-header)
    (display-buffer buf '((display-buffer-reuse-window display-buffer-at-bottom)
                          (window-height . 12)))))

(defun kiln--on-output (params)
  "A `run/output' notification PARAMS."
  (when kiln--run
    (kiln--output-append (if (equal (plist-get params :stream) "stderr") 'stderr 'stdout)
                         (or (plist-get params :text) ""))))

(defun kiln--ordinal (n)
  "N as an English ordinal: 1st, 2nd, 3rd, 4th, 11th, 21st."
  (format "%d%s" n (if (memq (% n 100) '(11 12 13))
                       "th"
                     (pcase (% n 10) (1 "st") (2 "nd") (3 "rd") (_ "th")))))

(defun kiln--on-status (params)
  "A `run/status' notification PARAMS: the run waits for a sandbox slot.
The server runs at most `sandbox.maxConcurrentRuns' at once and queues
the rest; without a word a queued run would look hung.  The mode line
and the output say so, then say when it leaves the queue.  One run at a
time here, so a status is the current run's unless it names another."
  (let ((id (plist-get params :runId)))
    (when (and kiln--run
               (or (null id) (null (plist-get kiln--run :run-id))
                   (equal id (plist-get kiln--run :run-id))))
      (when (stringp id) (plist-put kiln--run :run-id id))
      (pcase (plist-get params :state)
        ("queued"
         (let* ((pos (plist-get params :position))
                (pos (if (and (integerp pos) (> pos 0)) pos 1)))
           (plist-put kiln--run :queued pos)
           (kiln--set-status (format "queued (%s)" (kiln--ordinal pos)))
           (kiln--output-note
            (format "[queued: %s in line for a sandbox slot; %s of %s busy]"
                    (kiln--ordinal pos) (or (plist-get params :running) "?")
                    (or (plist-get params :maxConcurrentRuns) "?"))
            'kiln-note)))
        ("running"
         (kiln--set-status "running")
         (when (plist-get kiln--run :queued)
           (plist-put kiln--run :queued nil)
           (kiln--output-note "[running: a slot is free]" 'kiln-note))))
      (force-mode-line-update t))))

(defun kiln--on-explanation (params)
  "An `intent/explanation' notification PARAMS."
  (when (and kiln--run (stringp (plist-get params :text)))
    (kiln--output-append 'explain (plist-get params :text))))

(defun kiln--on-attempt (params)
  "An `intent/attempt' notification PARAMS."
  (let* ((stage (or (plist-get params :stage) ""))
         (ok (plist-get params :ok))
         (extra (cond ((plist-get params :verdict)
                       (format " (verdict %s)" (plist-get params :verdict)))
                      ((and (eq ok :json-false) (plist-get params :failure))
                       (concat ": " (plist-get params :failure)))
                      ((stringp (plist-get params :error))
                       (concat ": " (plist-get params :error)))
                      (t ""))))
    (kiln--output-note (format "-- attempt %s %s%s --" (plist-get params :attempt)
                               (string-replace "_" " " stage) extra)
                       (if (eq ok t) 'kiln-success 'kiln-note))
    ;; In the conversation, under the run's heading: each repair, what
    ;; the model said and wrote.  The attempts' lines come with the
    ;; output, at the run's end.
    (when (equal stage "repaired")
      (if (and (listp (plist-get params :proposal))
               (plist-get (plist-get params :proposal) :proposalId))
          (kiln--conv-proposal (plist-get params :proposal)
                               (format "repair (attempt %s):" (plist-get params :attempt)))
        (kiln--conv (format "*** repair (attempt %s)%s" (plist-get params :attempt) extra)
                    'kiln-conversation-subheading)
        (when (stringp (plist-get params :code))
          (kiln--conv-code (plist-get params :code)))))
    (when (stringp (plist-get params :code))
      ;; The repaired code, seen before it runs.
      (dolist (l (split-string (string-remove-suffix "\n" (plist-get params :code)) "\n"))
        (kiln--output-note (concat "  | " l))))
    (when (and kiln--run (equal stage "running"))
      (plist-put kiln--run :attempts (1+ (or (plist-get kiln--run :attempts) 0))))
    ;; The review follows the repaired proposal.
    (when (and kiln--run (equal stage "repaired") (plist-get params :proposal))
      (kiln--follow-repair (plist-get kiln--run :buffer) (plist-get params :proposal)))))

(defconst kiln--mime-extensions
  '(("image/png" . "png") ("image/jpeg" . "jpg") ("image/gif" . "gif")
    ("image/svg+xml" . "svg") ("image/webp" . "webp") ("application/pdf" . "pdf")
    ("text/plain" . "txt") ("text/csv" . "csv") ("text/html" . "html")
    ("application/json" . "json"))
  "File extensions of the MIME types a run shows or leaves.")

(defun kiln--save-bytes (name bytes &optional mime)
  "Write BYTES (a unibyte string) to a fresh file named after NAME; return it.
The file goes under `kiln-display-directory', its extension from MIME
\(else NAME's own, else .bin), so a viewer knows what it holds."
  (let* ((dir (file-name-as-directory (expand-file-name kiln-display-directory)))
         (ext (or (cdr (assoc mime kiln--mime-extensions))
                  (file-name-extension name)
                  "bin"))
         (base (replace-regexp-in-string "[^[:alnum:]._-]" "_"
                                         (file-name-sans-extension
                                          (file-name-nondirectory name))))
         file)
    (make-directory dir t)
    (setq file (make-temp-file (concat dir "kiln-" base "-") nil (concat "." ext)))
    (let ((coding-system-for-write 'binary))
      (write-region bytes nil file nil 'silent))
    file))

(defun kiln--graphic-p ()
  "Non-nil when the selected frame can show an image."
  (if (fboundp 'display-images-p) (display-images-p) (display-graphic-p)))

;;;###autoload
(defun kiln-open-file (file)
  "Open FILE, an image or other file a run made.
In a graphical frame, or for a text file, it is visited in Emacs.
In a terminal an image cannot be shown there (Emacs would show its raw
bytes): its path is said and it is handed to `kiln-external-viewer'
\(xdg-open where there is one, else `browse-url-of-file')."
  (interactive "fkiln open file: ")
  (let ((mime (car (rassoc (downcase (or (file-name-extension file) "")) kiln--mime-extensions))))
    (if (or (kiln--graphic-p)
            (and mime (string-prefix-p "text/" mime))
            (and (null mime) (not (member (file-name-extension file) '("bin")))
                 (not (kiln--binary-file-p file))))
        (find-file-other-window file)
      (message "[kiln] %s: opened with %s" file
               (if kiln-external-viewer (car kiln-external-viewer) "browse-url"))
      (if kiln-external-viewer
          (let ((proc (make-process :name "kiln-viewer" :noquery t
                                    :command (append kiln-external-viewer (list file))
                                    :connection-type 'pipe
                                    :buffer nil)))
            (set-process-query-on-exit-flag proc nil)
            proc)
        (browse-url-of-file file)))))

(defun kiln--binary-file-p (file)
  "Non-nil when the first bytes of FILE hold a NUL."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (ignore-errors (insert-file-contents-literally file nil 0 1024))
    (goto-char (point-min))
    (search-forward "\0" nil t)))

(defun kiln--image-type (mime)
  "The Emacs image type of MIME, or nil."
  (pcase mime
    ("image/png" 'png) ("image/jpeg" 'jpeg) ("image/gif" 'gif)
    ("image/svg+xml" 'svg) ("image/webp" 'webp) (_ nil)))

(defun kiln--insert-file-button (label file)
  "Insert a button LABEL that opens FILE (`kiln-open-file')."
  (insert-text-button label 'action (lambda (_) (kiln-open-file file))
                      'follow-link t 'help-echo file))

(defun kiln--output-image (name mime data &optional file)
  "Show image DATA (bytes) of type MIME named NAME in the output.
FILE, when given, is where it is on disk; otherwise it is saved."
  (let* ((type (kiln--image-type mime))
         (file (or file (kiln--save-bytes name data mime)))
         ;; A terminal frame of a graphical Emacs has the image types
         ;; but shows no image; batch (the tests) makes them anyway.
         (image (and type (image-type-available-p type)
                     (or noninteractive (kiln--graphic-p))
                     (create-image data type t :max-width kiln-output-max-image-width
                                   :ascent 'center))))
    (kiln--with-output
      (when kiln--output-open (insert "\n"))
      (setq kiln--output-open nil)
      (if image
          (progn (insert-image image (format "[%s]" name))
                 (insert "\n"))
        (insert (propertize (format "[%s: %s, %d bytes; this Emacs cannot show images: the path opens it with %s] "
                                    name mime (length data)
                                    (if kiln-external-viewer (car kiln-external-viewer)
                                      "browse-url"))
                            'face 'kiln-note)))
      (kiln--insert-file-button file file)
      (insert "\n"))
    (plist-put kiln--run :images (append (plist-get kiln--run :images) (list file)))
    file))

(defun kiln--on-artifact (params)
  "A `run/artifact' notification PARAMS: a file the program left in /work/out."
  (when kiln--run
    (plist-put kiln--run :artifacts (append (plist-get kiln--run :artifacts) (list params)))
    (let* ((name (or (plist-get params :name) "artifact"))
           (mime (or (plist-get params :mimeType) "application/octet-stream"))
           (data (and (equal (plist-get params :encoding) "base64")
                      (ignore-errors (base64-decode-string (plist-get params :data)))))
           (path (plist-get params :path)))
      (cond
       ((and (kiln--image-type mime) (or data path))
        (kiln--output-note (format "artifact %s (%s, %s bytes):" name mime
                                   (plist-get params :size)))
        (kiln--output-image name mime
                            (or data (with-temp-buffer
                                       (set-buffer-multibyte nil)
                                       (insert-file-contents-literally path)
                                       (buffer-string)))
                            path))
       ((or data path)
        (let ((file (or path (kiln--save-bytes name data mime))))
          (kiln--with-output
            (when kiln--output-open (insert "\n"))
            (setq kiln--output-open nil)
            (insert (propertize (format "artifact %s (%s, %s bytes): " name mime
                                        (plist-get params :size))
                                'face 'kiln-note))
            (kiln--insert-file-button file file)
            (insert "\n"))))
       (t (kiln--output-note (format "artifact %s (%s bytes) not copied: %s" name
                                     (plist-get params :size)
                                     (or (plist-get params :omitted) "no data"))))))))

(defun kiln--on-display (params)
  "A `run/display' notification PARAMS: a MIME bundle to show, as Jupyter's."
  (when kiln--run
    (let* ((data (plist-get params :data))
           (image (cl-loop for mime in '("image/png" "image/jpeg" "image/gif" "image/svg+xml")
                           for v = (plist-get data (intern (concat ":" mime)))
                           when (stringp v) return (cons mime v)))
           (plain (plist-get data :text/plain)))
      (plist-put kiln--run :displays (append (plist-get kiln--run :displays) (list params)))
      (cond
       (image
        (let* ((mime (car image))
               (bytes (if (equal mime "image/svg+xml")
                          (encode-coding-string (cdr image) 'utf-8)
                        (ignore-errors (base64-decode-string (cdr image))))))
          (if bytes
              (kiln--output-image (format "display %d" (length (plist-get kiln--run :displays)))
                                  mime bytes)
            (kiln--output-note "[a display whose image is not valid base64]" 'kiln-failure))))
       ;; Tables and everything else as text: pandas' text/plain is its
       ;; table as text.
       ((stringp plain)
        (kiln--output-append 'stdout (if (string-suffix-p "\n" plain) plain
                                       (concat plain "\n"))))
       (t (kiln--output-note (format "[a display of %s]"
                                     (string-join (cl-loop for (k _v) on data by #'cddr
                                                           collect (substring (symbol-name k) 1))
                                                  ", "))))))))

(defun kiln--summary (run)
  "A short line saying how RUN (a `snippet/run' result) ended."
  (let ((parts nil))
    (when (eq (plist-get run :timedOut) t) (push "timed out" parts))
    (when (plist-get run :signal) (push (format "killed by %s" (plist-get run :signal)) parts))
    (when (plist-get run :exitCode) (push (format "exit %s" (plist-get run :exitCode)) parts))
    (when (eq (plist-get run :truncated) t) (push "output truncated" parts))
    (when (plist-get run :durationMs)
      (push (format "%s ms" (round (plist-get run :durationMs))) parts))
    (string-join (nreverse parts) ", ")))

(defun kiln--run-finish (run err result)
  "RUN ended with ERR or RESULT."
  (when (eq run kiln--run)
    (setq kiln--run nil)
    (kiln--set-status (kiln--ending err result) kiln-status-done-seconds)
    (if err
        (progn
          (kiln--output-note (concat "[" (kiln--run-error-text err) "]") 'kiln-failure)
          (when (equal (plist-get (plist-get err :data) :kind) "denied")
            (kiln--offer-override run (plist-get err :data)))
          (setq kiln-last-run (list :error err :artifacts (plist-get run :artifacts)
                                    :displays (plist-get run :displays)
                                    :images (plist-get run :images)))
          (kiln--conv-run run err nil))
      (let* ((last (if (plist-member result :attempts) (plist-get result :result) result))
             (attempts (plist-get result :attempts))
             (ok (equal (plist-get last :exitCode) 0)))
        (kiln--output-note (format "[%s%s]" (kiln--summary last)
                                   (if (> (length attempts) 1)
                                       (format ", %d attempts (%d repairs)" (length attempts)
                                               (1- (length attempts)))
                                     ""))
                           (if ok 'kiln-success 'kiln-failure))
        (when (plist-get result :stopped)
          (kiln--output-note (format "[stopped: %s]" (string-replace
                                                      "_" " " (plist-get result :stopped)))
                             'kiln-failure))
        (when-let ((repaired (plist-get result :proposal))
                   (buffer (plist-get run :buffer)))
          ;; A repair is a new proposal: it ran only if automatic repair let it.
          (kiln--output-note (format "[the repaired code %s did not run: it needs your approval (verdict %s): review it, then kiln-run runs it]"
                                     (plist-get repaired :proposalId)
                                     (plist-get repaired :verdict))
                             'kiln-failure)
          ;; Followed already at its `repaired' attempt, unless missed.
          (kiln--follow-repair buffer repaired))
        (kiln--record-changes last)
        (setq kiln-last-run (list :result result :run last
                                  :artifacts (plist-get run :artifacts)
                                  :displays (plist-get run :displays)
                                  :images (plist-get run :images)))
        (kiln--conv-run run nil result)))))

(defun kiln--ending (err result)
  "How a run ended with ERR or RESULT, in a word or two for the mode line."
  (let* ((kind (plist-get (plist-get err :data) :kind))
         (last (if (plist-member result :attempts) (plist-get result :result) result))
         (code (plist-get last :exitCode)))
    (cond ((equal kind "denied") "denied")
          ((eql (plist-get err :code) -32800) "cancelled")
          (err "failed")
          ((eq (plist-get last :timedOut) t) "timed out")
          ((equal code 0) "done")
          ((integerp code) (format "failed (exit %d)" code))
          ((plist-get last :signal) (format "killed (%s)" (plist-get last :signal)))
          (t "done"))))

(defun kiln--run-error-text (err)
  "A sentence for the error ERR of a run."
  (let* ((data (plist-get err :data))
         (kind (plist-get data :kind)))
    (cond
     ((equal kind "denied")
      (concat "not run: the validator denied it: "
              (kiln--visible
               (mapconcat #'kiln--diag-text (or (plist-get data :diagnostics) []) "; "))))
     ((equal kind "conflict")
      "not run: the buffer changed since the proposal; run kiln-intent again")
     (t (kiln--error-text err)))))

(defvar kiln--denied nil
  "The last run the validator denied, to run anyway.
A plist (:method :params :header :buffer :rules).  Set only when kiln
said an override is allowed (data.overrideAllowed).")

(defun kiln--offer-override (run data)
  "RUN was denied with DATA: name every rule, then offer to run anyway or say how.
Each rule is the diagnostic's code and message (control characters
made visible).  Only when kiln says `overrideAllowed' is the run
offered again, through `kiln-run-anyway' and its one more confirmation."
  (let ((diags (append (or (plist-get data :diagnostics) []) nil)))
    (kiln--output-note (format "[denied by %d rule%s:]" (length diags)
                               (if (= (length diags) 1) "" "s"))
                       'kiln-failure)
    (dolist (d diags)
      (let ((range (plist-get d :range)))
        (kiln--output-note
         (format "  %s line %s: %s"
                 (kiln--visible (or (plist-get d :code) "?"))
                 (if range (1+ (plist-get (plist-get range :start) :line)) "?")
                 (kiln--visible (or (plist-get d :message) "")))
         'kiln-failure)))
    (setq kiln--denied nil)
    ;; Only a `snippet/run' takes "override"; the model's code never runs
    ;; past a deny.
    (if (and (eq (plist-get data :overrideAllowed) t) (plist-get run :params)
             (eq (plist-get run :method) :snippet/run))
        (progn
          (setq kiln--denied (list :method (plist-get run :method)
                                   :params (plist-get run :params)
                                   :header (plist-get run :header)
                                   :buffer (plist-get run :buffer)
                                   :rules (mapconcat (lambda (d) (kiln--visible
                                                                  (format "%s" (or (plist-get d :code) "?"))))
                                                     diags ", ")))
          (kiln--with-output
            (insert "  ")
            (kiln--change-button "run anyway" #'kiln-run-anyway
                                 "run it past the validator's deny, after one more question")
            (insert (propertize "(M-x kiln-run-anyway: kiln's config allows an override)\n"
                                'face 'kiln-note))))
      (kiln--output-note
       (if (eq (plist-get run :kind) 'proposal)
           "[the model's code never runs past a deny: accept it into the buffer, change it, and run the buffer]"
         "[to be able to run it anyway: set \"validator\": {\"allowOverride\": true} in kiln's config file, then M-x kiln-restart]")
       'kiln-note))))

;;;###autoload
(defun kiln-run-anyway ()
  "Run the code the validator just denied, on purpose, after one more confirmation.
Offered only when kiln's config allows it (validator.allowOverride);
the request is sent again with \"override\": true."
  (interactive)
  (let ((d (or kiln--denied
               (user-error "[kiln] no denied run to run anyway (kiln's config must allow an override)"))))
    (when (yes-or-no-p (format "Run the code kiln's validator denied (%s) anyway? " (plist-get d :rules)))
      (setq kiln--denied nil)
      (with-current-buffer (if (buffer-live-p (plist-get d :buffer)) (plist-get d :buffer)
                             (current-buffer))
        (kiln--start-run (plist-get d :method)
                         (append (plist-get d :params) (list :override t))
                         (concat (plist-get d :header) ", run anyway past the validator's deny ("
                                 (plist-get d :rules) ")")
                         'snippet)))))

(defun kiln--run-died (how)
  "The server ended as HOW while a run was in flight."
  (let ((run kiln--run))
    (when run
      (kiln--run-finish run (list :code -1 :message (concat "the server " how)) nil))))

(defun kiln--start-run (method params header kind)
  "Send the run request METHOD with PARAMS; output named HEADER; KIND of run."
  (when kiln--run
    (user-error "[kiln] a run is in progress (M-x kiln-cancel stops it)"))
  (kiln--connection)
  (kiln--output-start header)
  (kiln--show-status)
  (let ((run (list :kind kind :buffer (current-buffer) :attempts 0
                   :started (float-time) :method method :params params :header header)))
    (setq kiln--run run)
    (kiln--set-status "running")
    (kiln--conv (format "** run: %s" header) 'kiln-conversation-subheading)
    (plist-put run :id (kiln--async method params
                                    (lambda (r) (kiln--run-finish run nil r))
                                    (lambda (e) (kiln--run-finish run e nil))))
    run))

;;;###autoload
(defun kiln-run (&optional beg end)
  "Approve and run the proposal here; without one, run the region or buffer.
A proposal runs whole only while every hunk is pending or every hunk
was accepted; after a review that kept part of it, the buffer runs as
it is.  With BEG and END, run that part of the buffer.  Output streams into
the `kiln-output-buffer-name' buffer.  Return the run (a plist)."
  (interactive (and (use-region-p) (list (region-beginning) (region-end))))
  (let* ((rec (and (null beg) kiln--runnable))
         (kept (and rec (= (kiln--version-of) (plist-get rec :tick))
                    (kiln--kept-note rec))))
    (if (and rec (kiln--whole-p rec))
        (kiln--approve)
      ;; Part of a proposal kept (a hunk rejected, or some accepted and
      ;; others still pending) runs as the buffer holds it, never as the
      ;; model proposed it.
      (let* ((lang (kiln--language-or-error))
             (beg (or beg (save-restriction (widen) (point-min))))
             (end (or end (save-restriction (widen) (point-max))))
             (code (save-restriction (widen) (buffer-substring-no-properties beg end)))
             (params (list :language lang :code code))
             (header (format "%s%s" (buffer-name)
                             (cond (kept (format " as you kept it (%s)" kept))
                                   ((and (= beg (point-min)) (= end (point-max))) "")
                                   (t (format ":%d-%d" (line-number-at-pos beg)
                                              (line-number-at-pos end)))))))
        (when kiln-limits (setq params (plist-put params :limits kiln-limits)))
        (when kept (message "[kiln] running %s" header))
        (kiln--start-run :snippet/run params header 'snippet)))))

(defun kiln--approve ()
  "Run the proposal of this buffer with `intent/approve'."
  (let* ((rec kiln--runnable)
         (proposal (plist-get rec :proposal))
         ;; The request's version while the buffer holds exactly what
         ;; the review wrote, else its own (the server then refuses).
         (version (if (= (kiln--version-of) (plist-get rec :tick))
                      (plist-get rec :version)
                    (kiln--version-of)))
         (params (list :proposalId (plist-get proposal :proposalId)
                       :textDocument (list :uri (kiln--uri) :version version)
                       :explain (if kiln-explain t :json-false)
                       :workDoneToken (kiln--new-token))))
    (when (> kiln-repair-attempts 1)
      (setq params (plist-put params :repair
                              (append (list :maxAttempts kiln-repair-attempts)
                                      (and kiln-auto-repair (list :auto t))))))
    (when kiln-limits (setq params (plist-put params :limits kiln-limits)))
    (plist-put (kiln--start-run :intent/approve params
                                (format "proposal %s (%s)" (plist-get proposal :proposalId)
                                        (buffer-name))
                                'proposal)
               :usage (plist-get proposal :usage))))

;;;###autoload
(defun kiln-cancel ()
  "Stop the run in flight, or else this buffer's intent."
  (interactive)
  (cond
   (kiln--run
    (let ((run kiln--run))
      (kiln--cancel-request (plist-get run :id))
      ;; The run ends here at once, whatever the server answers.
      (kiln--run-finish run (list :code -32800 :message "cancelled") nil)
      (message "[kiln] run cancelled")))
   ((or (kiln--intent-for (current-buffer)) (car kiln--intents))
    (let ((req (or (kiln--intent-for (current-buffer)) (car kiln--intents))))
      (kiln--end-preview req)
      (setq kiln--intents (delq req kiln--intents) kiln--status nil)
      (kiln--cancel-request (plist-get req :id))
      (kiln--close-preview)
      (force-mode-line-update t)
      (message "[kiln] intent cancelled")))
   (t (message "[kiln] nothing to cancel"))))

;;;; Workspace changes

(defvar kiln-last-changes nil
  "The last run's workspace changes, offered to `kiln-apply-changes'.
A plist (:run-id :workspace :files :omitted :applying :declining); each
of :files is a plist (:path :kind :size :binary :mime :stored :not-kept
:text :state :reason), :text the new text of a text file (from the run's
`workspaceEdit'), :state nil until an apply, then `applied' or `skipped'
\(with kiln's :reason); after `kiln-discard-changes', `declined' or
`kept' (the session still holds it, with kiln's :reason).")

(defun kiln--change-name (offer path)
  "Return PATH relative to the workspace of OFFER (`kiln-last-changes')."
  (let ((ws (plist-get offer :workspace)))
    (if (and ws (string-prefix-p (file-name-as-directory ws) path))
        (substring path (length (file-name-as-directory ws)))
      path)))

(defun kiln--file-of-uri (uri)
  "The local file name of the file: URI, or nil."
  (when (and (stringp uri) (string-prefix-p "file://" uri))
    (decode-coding-string (url-unhex-string (substring uri 7)) 'utf-8)))

(declare-function url-unhex-string "url-util" (str &optional allow-newlines))

(defun kiln--edit-texts (edit)
  "An alist (PATH . NEW-TEXT) of the text files of the `workspaceEdit' EDIT."
  (require 'url-util)
  (cl-loop for dc across (or (and (listp edit) (plist-get edit :documentChanges)) [])
           for path = (kiln--file-of-uri (plist-get (plist-get dc :textDocument) :uri))
           when (and path (plist-get dc :edits))
           collect (cons path (mapconcat (lambda (e) (or (plist-get e :newText) ""))
                                         (plist-get dc :edits) ""))))

(defun kiln--change-button (label action help)
  "Insert a button [LABEL] to call ACTION with no argument.
HELP is its tooltip."
  (insert-text-button (concat "[" label "]") 'action (lambda (_) (funcall action))
                      'follow-link t 'help-echo help)
  (insert " "))

(defun kiln--record-changes (run)
  "Keep the `workspaceChanges' of RUN for `kiln-apply-changes' and list them.
Each file is listed with its kind and size, and buttons to review,
apply and discard it (`kiln-review-change', `kiln-apply-changes',
`kiln-discard-changes'); binary ones with their MIME type, images shown
inline where this Emacs can show them, from the copy kiln kept
\(`stored')."
  (let ((changes (plist-get run :workspaceChanges)))
    (when (and (vectorp changes) (> (length changes) 0))
      (let* ((ws (plist-get run :workspace))
             (texts (kiln--edit-texts (plist-get run :workspaceEdit)))
             (files (cl-loop for c across changes
                             collect (list :path (plist-get c :path)
                                           :kind (plist-get c :kind)
                                           :size (plist-get c :size)
                                           :binary (eq (plist-get c :binary) t)
                                           :mime (plist-get c :mimeType)
                                           :stored (plist-get c :stored)
                                           :not-kept (plist-get c :notKept)
                                           :text (cdr (assoc (plist-get c :path) texts)))))
             (o (list :run-id (plist-get run :runId)
                      :workspace (and (stringp ws) ws)
                      :files files
                      :omitted (plist-get run :workspaceChangesOmitted))))
        (setq kiln-last-changes o)
        (kiln--output-note
         (format "[the run changed %d file%s in the workspace; nothing is written until you apply %s]"
                 (length files) (if (= (length files) 1) "" "s")
                 (if (= (length files) 1) "it" "them"))
         'kiln-failure)
        (dolist (f files)
          (kiln--output-note
           (concat (format "  %-8s %s" (plist-get f :kind)
                           (kiln--visible (kiln--change-name o (plist-get f :path))))
                   (cond ((plist-get f :binary)
                          (format " (%s bytes, %s)" (plist-get f :size)
                                  (or (plist-get f :mime) "application/octet-stream")))
                         ((integerp (plist-get f :size))
                          (format " (%s bytes)" (plist-get f :size)))
                         (t ""))
                   (if (plist-get f :not-kept)
                       (format " [not kept, cannot be applied: %s]"
                               (kiln--visible (plist-get f :not-kept)))
                     "")))
          (let ((path (plist-get f :path)))
            (kiln--with-output
              (insert "    ")
              (kiln--change-button "review" (lambda () (kiln-review-change path))
                                   (concat "see what the run made of " path))
              (kiln--change-button "apply" (lambda () (kiln-apply-changes (list path)))
                                   (concat "have kiln write " path))
              (kiln--change-button "discard" (lambda () (kiln-discard-changes (list path)))
                                   (concat "decline the change to " path))
              (insert "\n")))
          (let ((type (kiln--image-type (plist-get f :mime)))
                (stored (plist-get f :stored)))
            (when (and (plist-get f :binary) (stringp stored))
              (kiln--with-output
                (insert "    ")
                (if (and type (image-type-available-p type))
                    (progn
                      (insert-image (create-image stored type nil
                                                  :max-width kiln-output-max-image-width
                                                  :ascent 'center)
                                    (format "[%s]" (plist-get f :path)))
                      (insert "\n    "))
                  (insert (propertize "kept at " 'face 'kiln-note)))
                (kiln--insert-file-button stored stored)
                (insert "\n")))))
        (when (and (integerp (plist-get o :omitted)) (> (plist-get o :omitted) 0))
          (kiln--output-note (format "  ... and %d more, not listed (not applied)"
                                     (plist-get o :omitted))))
        (kiln--with-output
          (insert "  ")
          (kiln--change-button "apply all" #'kiln-apply-changes
                               "have kiln write every change (M-x kiln-apply-changes)")
          (kiln--change-button "discard all" #'kiln-discard-changes
                               "decline every change (M-x kiln-discard-changes)")
          (insert (propertize "(M-x kiln-review-change, kiln-apply-changes, kiln-discard-changes)\n"
                              'face 'kiln-note)))
        o))))

(defun kiln--change-of (path)
  "The file plist of PATH in `kiln-last-changes', or a `user-error'."
  (or (and kiln-last-changes
           (cl-find path (plist-get kiln-last-changes :files)
                    :key (lambda (f) (plist-get f :path)) :test #'equal))
      (user-error "[kiln] %s is no change of the last run" path)))

;;;###autoload
(defun kiln-review-change (path)
  "Show what the last run made of PATH, a file it changed in the workspace.
A text file is shown as a diff from the file on disk (or from nothing,
for a new file) to the run's text; a binary one is opened from the copy
kiln kept (`kiln-open-file'); a deletion is said.  Nothing is written."
  (interactive
   (list (let ((o (or kiln-last-changes
                      (user-error "[kiln] no workspace changes to review"))))
           (completing-read "kiln review change: "
                            (mapcar (lambda (f) (plist-get f :path)) (plist-get o :files))
                            nil t))))
  (let* ((f (kiln--change-of path))
         (name (kiln--change-name kiln-last-changes path)))
    (cond
     ((equal (plist-get f :kind) "deleted")
      (message "[kiln] the run deleted %s; kiln-apply-changes deletes it here too"
               (kiln--visible name)))
     ((stringp (plist-get f :text))
      (require 'diff)
      (let ((new (get-buffer-create (format " *kiln change %s*" name)))
            (old (if (file-exists-p path) path
                   (with-current-buffer (get-buffer-create " *kiln nothing*")
                     (erase-buffer)
                     (current-buffer)))))
        (with-current-buffer new
          (erase-buffer)
          (insert (plist-get f :text)))
        (let ((buf (diff-no-select old new nil t
                                   (get-buffer-create (format "*kiln change %s*" name)))))
          (display-buffer buf)
          buf)))
     ((stringp (plist-get f :stored))
      (kiln-open-file (plist-get f :stored)))
     (t (message "[kiln] the run's new %s was not kept: %s" (kiln--visible name)
                 (kiln--visible (or (plist-get f :not-kept) "no copy")))))))

(declare-function diff-no-select "diff" (old new &optional switches no-async buf))

(defun kiln--changes-applied (o result local-skips)
  "Take kiln's RESULT to an apply of O; LOCAL-SKIPS were never sent.
Mark each file, revert the unmodified buffers of the files written, and
say what happened: each skipped file with kiln's reason, as a failure."
  (let ((done 0) (skips nil))
    (cl-loop for p across (or (plist-get result :applied) [])
             for f = (cl-find p (plist-get o :files)
                              :key (lambda (f) (plist-get f :path)) :test #'equal)
             when f do
             (plist-put f :state 'applied)
             (cl-incf done)
             (let ((buf (and (not (equal (plist-get f :kind) "deleted"))
                             (find-buffer-visiting p))))
               (when (and buf (not (buffer-modified-p buf)))
                 (with-current-buffer buf (revert-buffer t t t)))))
    (cl-loop for s across (or (plist-get result :skipped) [])
             for p = (plist-get s :path)
             for f = (cl-find p (plist-get o :files)
                              :key (lambda (f) (plist-get f :path)) :test #'equal)
             do (when f (plist-put f :state 'skipped) (plist-put f :reason (plist-get s :reason)))
             (push (cons (kiln--change-name o p) (plist-get s :reason)) skips))
    (setq skips (append (nreverse skips) local-skips))
    (dolist (s skips)
      (kiln--output-note (format "[skipped %s: %s]" (car s) (cdr s)) 'kiln-failure))
    (let ((text (format "applied %d change%s to %s%s" done (if (= done 1) "" "s")
                        (plist-get o :workspace)
                        (if skips
                            (format "; skipped %d: %s" (length skips)
                                    (mapconcat (lambda (s) (format "%s (%s)" (car s) (cdr s)))
                                               skips "; "))
                          ""))))
      (kiln--output-note (concat "[" text "]") (if skips 'kiln-failure 'kiln-success))
      (setq text (concat "[kiln] " text))
      (message "%s" (if skips (propertize text 'face 'error) text)))))

;;;###autoload
(defun kiln-apply-changes (&optional only)
  "Have kiln write into the project what the last run changed there.
ONLY, a list of host paths, limits it to those (the [apply] button of
one file).
Every change not applied yet, text and binary alike, is sent to kiln
\(`workspace/applyChanges'), which writes each file atomically after
checking it against what the folder held when the run started: a file
changed since is skipped, never overwritten, and named here with
kiln's reason.  A file modified in a buffer is not sent.  Buffers of
the files written are reverted when they hold no changes of their own."
  (interactive)
  (let ((o kiln-last-changes)
        (paths nil) (local-skips nil))
    (unless o (user-error "[kiln] no workspace changes to apply"))
    (when (plist-get o :applying)
      (user-error "[kiln] the workspace changes are being applied"))
    (when (plist-get o :declining)
      (user-error "[kiln] the workspace changes are being discarded"))
    (dolist (f (plist-get o :files))
      (unless (or (memq (plist-get f :state) '(applied declined kept))
                  (and only (not (member (plist-get f :path) only))))
        (let ((buf (find-buffer-visiting (plist-get f :path))))
          (if (and buf (buffer-modified-p buf))
              (let ((why "modified in a buffer: save or revert it, then apply again"))
                (plist-put f :state 'skipped)
                (plist-put f :reason why)
                (push (cons (kiln--change-name o (plist-get f :path)) why) local-skips))
            (push (plist-get f :path) paths)))))
    (setq paths (nreverse paths) local-skips (nreverse local-skips))
    (unless (or paths local-skips)
      (if (cl-some (lambda (f) (memq (plist-get f :state) '(declined kept))) (plist-get o :files))
          (user-error "[kiln] no workspace changes to apply: the rest were discarded")
        (user-error "[kiln] every workspace change of this run is applied already")))
    ;; kiln keeps a run's changes in the server's memory only.
    (unless (kiln-running-p)
      (user-error "[kiln] nothing applied: the server that ran the code has stopped, and its changes with it (run the code again)"))
    (unless (kiln-supports-p "workspace/applyChanges")
      (user-error "[kiln] nothing applied: this kiln server cannot apply changes (no workspace/applyChanges)"))
    (if (null paths)
        (kiln--changes-applied o nil local-skips)
      (plist-put o :applying t)
      (kiln--async :workspace/applyChanges
                   (list :runId (plist-get o :run-id) :paths (vconcat paths))
                   (lambda (r)
                     (plist-put o :applying nil)
                     (kiln--changes-applied o r local-skips))
                   (lambda (e)
                     (plist-put o :applying nil)
                     (message "%s" (propertize (concat "[kiln] nothing applied: " (kiln--error-text e))
                                               'face 'error)))))
    o))

;;;###autoload
(defun kiln-discard-changes (&optional only)
  "Decline what the last run changed in the workspace; write nothing.
ONLY, a list of host paths, limits it to those (the [discard] button
of one file).
Every change not applied yet is sent to kiln
\(`workspace/declineChanges'): none can be applied afterwards, and a
live session drops them from its layer, so its next run sees the
folder's file again.  Each change the session still holds is named
with kiln's reason, as a failure.  Without a server that can decline
them, the changes are forgotten here only, and this says so."
  (interactive)
  (let ((o kiln-last-changes) (paths nil))
    (unless o (user-error "[kiln] no workspace changes to discard"))
    (when (plist-get o :applying)
      (user-error "[kiln] the workspace changes are being applied"))
    (when (plist-get o :declining)
      (user-error "[kiln] the workspace changes are being discarded"))
    (dolist (f (plist-get o :files))
      (unless (or (memq (plist-get f :state) '(applied declined))
                  (and only (not (member (plist-get f :path) only))))
        (push (plist-get f :path) paths)))
    (setq paths (nreverse paths))
    (cond
     ((and (null paths) only)
      (message "[kiln] nothing to discard there: it was applied or discarded already"))
     ((null paths)
      (setq kiln-last-changes nil)
      (message "[kiln] workspace changes forgotten (none was left to discard)"))
     ;; kiln keeps a run's changes in the server's memory only.
     ((not (kiln-running-p))
      (kiln--changes-forgotten
       "the server that ran the code has stopped, and its changes with it"))
     ((not (kiln-supports-p "workspace/declineChanges"))
      (kiln--changes-forgotten
       "this kiln server cannot decline changes (no workspace/declineChanges): a session may still show them"))
     (t
      (plist-put o :declining t)
      (kiln--async :workspace/declineChanges
                   (list :runId (plist-get o :run-id) :paths (vconcat paths))
                   (lambda (r)
                     (plist-put o :declining nil)
                     (kiln--changes-declined o r))
                   (lambda (e)
                     (plist-put o :declining nil)
                     (message "%s" (propertize
                                    (concat "[kiln] nothing discarded: " (kiln--error-text e)
                                            (if (eql (plist-get e :code) -32803)
                                                " (discard again after the run)"
                                              ""))
                                    'face 'error))))))
    o))

(defun kiln--changes-forgotten (why)
  "Forget the last offer here only, saying WHY kiln was not asked."
  (setq kiln-last-changes nil)
  (let ((text (concat "workspace changes forgotten here only: " why)))
    (kiln--output-note (concat "[" text "]") 'kiln-failure)
    (message "%s" (propertize (concat "[kiln] " text) 'face 'warning))))

(defun kiln--changes-declined (o result)
  "Take kiln's RESULT to a decline of O (`kiln-last-changes').
Mark each file `declined' (the session dropped it; it can no longer be
applied) or `kept' (the session still holds it, with kiln's reason), note
each in the output buffer and say what happened: a change the session
still holds is a failure, never a success."
  (let ((dropped nil) (kept nil))
    (cl-loop for p across (or (plist-get result :declined) [])
             for f = (cl-find p (plist-get o :files)
                              :key (lambda (f) (plist-get f :path)) :test #'equal)
             do (when f (plist-put f :state 'declined) (plist-put f :reason nil))
             (push (kiln--change-name o p) dropped))
    (cl-loop for k across (or (plist-get result :kept) [])
             for p = (plist-get k :path)
             for f = (cl-find p (plist-get o :files)
                              :key (lambda (f) (plist-get f :path)) :test #'equal)
             do (when f (plist-put f :state 'kept) (plist-put f :reason (plist-get k :reason)))
             (push (cons (kiln--change-name o p) (plist-get k :reason)) kept))
    (setq dropped (nreverse dropped) kept (nreverse kept))
    (dolist (d dropped)
      (kiln--output-note (format "[discarded %s: dropped by kiln]" d) 'kiln-success))
    (dolist (k kept)
      (kiln--output-note (format "[discarded %s, but the session still holds it: %s]" (car k) (cdr k))
                         'kiln-failure))
    (let ((text (format "discarded %d change%s of run %s: kiln dropped %s%s"
                        (length dropped) (if (= (length dropped) 1) "" "s")
                        (plist-get o :run-id)
                        (if dropped (mapconcat #'identity dropped ", ") "none")
                        (if kept
                            (format "; the session still holds %d: %s" (length kept)
                                    (mapconcat (lambda (k) (format "%s (%s)" (car k) (cdr k)))
                                               kept "; "))
                          ""))))
      (kiln--output-note (concat "[" text "]") (if kept 'kiln-failure 'kiln-success))
      (setq text (concat "[kiln] " text))
      (message "%s" (if kept (propertize text 'face 'error) text)))))

;;;; The minor mode

(defvar kiln-command-map
  (let ((map (make-sparse-keymap)))
    (define-key map "i" #'kiln-intent)
    (define-key map "r" #'kiln-run)
    (define-key map "v" #'kiln-validate)
    (define-key map "c" #'kiln-cancel)
    (define-key map "a" #'kiln-accept-hunk)
    (define-key map "k" #'kiln-reject-hunk)
    (define-key map "A" #'kiln-accept-all)
    (define-key map "K" #'kiln-reject-all)
    (define-key map "e" #'kiln-ediff)
    (define-key map "n" #'kiln-next-hunk)
    (define-key map "p" #'kiln-previous-hunk)
    (define-key map "w" #'kiln-apply-changes)
    (define-key map "d" #'kiln-discard-changes)
    (define-key map "o" #'kiln-conversation)
    (define-key map "!" #'kiln-run-anyway)
    map)
  "The commands of kiln, for a prefix key of the user's choice.")
(fset 'kiln-command-map kiln-command-map)

(defvar kiln-mode-map (make-sparse-keymap)
  "Keymap of `kiln-mode'; empty, as kiln binds no keys by itself.")

;;;###autoload
(define-minor-mode kiln-mode
  "Minor mode for kiln: the validator's diagnostics through Flymake.
The commands (`kiln-intent', `kiln-run', ...) work without it; bind
`kiln-command-map' to a prefix in `kiln-mode-map' to reach them."
  :lighter (:eval (if kiln--status (format " kiln:%s" kiln--status) " kiln"))
  :keymap kiln-mode-map
  (cond
   (kiln-mode
    (add-hook 'flymake-diagnostic-functions #'kiln-flymake nil t)
    (when kiln-flymake (flymake-mode 1)))
   (t
    (remove-hook 'flymake-diagnostic-functions #'kiln-flymake t))))

(provide 'kiln)
;;; kiln.el ends here
