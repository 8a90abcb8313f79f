;;; kiln-test.el --- ERT tests of kiln.el against the real server  -*- lexical-binding: t; -*-

;; The package, driven as a person would drive it, against the real kiln
;; server ($KILN_BIN, else build/asan/kiln) and, for intents, the fake
;; model server of tests/fake-model/ (started once, on a loopback port).
;; Run by tests/suites/66-emacs-package.sh:
;;   emacs --batch -Q -L editor-clients/emacs -l ert \
;;         -l editor-clients/emacs/test/kiln-test.el -f ert-run-tests-batch-and-exit
;; Each test starts from no server, no review and an empty output buffer,
;; and checks what a person would see: buffer text, diagnostics, the
;; output buffer's text and faces, messages.  Every wait is bounded; no
;; test asserts how long anything took.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'python)
(require 'kiln)

(defconst kiln-test--root
  (expand-file-name "../../.." (file-name-directory
                                (or load-file-name buffer-file-name)))
  "The repository's top directory.")

(defconst kiln-test--bin
  (let ((bin (getenv "KILN_BIN")))
    (if (and bin (not (equal bin "")))
        (expand-file-name bin)
      (expand-file-name "build/asan/kiln" kiln-test--root)))
  "The server under test.")

(defvar kiln-test--timeout 60 "Seconds any one wait may last.")

(defun kiln-test--wait (what pred &optional timeout)
  "Process output and timers until PRED is non-nil; fail naming WHAT."
  (let ((deadline (+ (float-time) (or timeout kiln-test--timeout))))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or (funcall pred)
        (ert-fail (format "timed out waiting for %s" what)))))

;;; The fake model server

(defvar kiln-test--fake nil "The fake model server's process.")
(defvar kiln-test--fake-url nil "Its URL.")

(defun kiln-test--fake-model ()
  "Start the fake model server once; return its URL."
  (unless (and kiln-test--fake (process-live-p kiln-test--fake))
    (let ((port-file (make-temp-file "kiln-fake-port")))
      (delete-file port-file)
      (setq kiln-test--fake
            (make-process :name "fake-model" :noquery t
                          :buffer (get-buffer-create " *fake-model*")
                          :command (list "python3"
                                         (expand-file-name "tests/fake-model/fake_model.py"
                                                           kiln-test--root)
                                         "--port" "0" "--port-file" port-file
                                         "--max-seconds" "600")))
      (kiln-test--wait "the fake model's port"
                       (lambda () (and (file-exists-p port-file)
                                       (> (file-attribute-size (file-attributes port-file)) 0)))
                       20)
      (setq kiln-test--fake-url
            (format "http://127.0.0.1:%s"
                    (string-trim (with-temp-buffer (insert-file-contents port-file)
                                                   (buffer-string)))))
      (delete-file port-file)))
  kiln-test--fake-url)

(defun kiln-test--long-program ()
  "The fake model's 30-line program, from the fake itself."
  (let ((default-directory kiln-test--root))
    (with-temp-buffer
      (unless (zerop (call-process
                      "python3" nil t nil "-c"
                      "import sys; sys.path.insert(0, 'tests/fake-model'); import fake_model; sys.stdout.write(fake_model.long_program())"))
        (ert-fail (list "reading the fake program" (buffer-string))))
      ;; kiln's extraction drops the blank lines that end a code block.
      (concat (string-trim-right (buffer-string) "\n+") "\n"))))

;;; Fixtures

(defvar kiln-test--messages nil "Messages shown during the test, newest first.")

(defun kiln-test--record-message (fmt &rest args)
  "Record the message FMT with ARGS, as the echo area would show it."
  (when fmt (push (apply #'format-message fmt args) kiln-test--messages)))

;; Advising a primitive in a natively compiling Emacs would compile a
;; trampoline into ~/.emacs.d; the tests' own calls need none.  Nor do
;; they want anything compiled behind their back.
(dolist (var '(comp-enable-subr-trampolines native-comp-enable-subr-trampolines
               comp-deferred-compilation native-comp-deferred-compilation
               native-comp-jit-compilation))
  (set var nil))
(advice-add 'message :before #'kiln-test--record-message)

(defun kiln-test--said (regexp)
  "Non-nil when a message of this test matched REGEXP."
  (cl-some (lambda (m) (string-match-p regexp m)) kiln-test--messages))

(defun kiln-test--reset ()
  "No server, no runs, no intents, no output buffer."
  (kiln-shutdown)
  ;; A death report already on its way belongs to the test that ends.
  (accept-process-output nil 0.2)
  (setq kiln-test--messages nil)
  (setq kiln--run nil kiln--intents nil kiln--status nil kiln-last-death nil
        kiln-last-run nil kiln-last-changes nil)
  (dolist (name (list kiln-output-buffer-name kiln-preview-buffer-name))
    (when (get-buffer name) (kill-buffer name))))

(defmacro kiln-test--with (bindings &rest body)
  "Run BODY with the package set up for the real server and BINDINGS.
BINDINGS are `let' bindings of options laid over the defaults."
  (declare (indent 1) (debug t))
  `(let ((kiln-command (list kiln-test--bin))
         (kiln-llm-provider nil) (kiln-llm-url nil) (kiln-llm-model nil)
         (kiln-llm-region nil) (kiln-llm-aws-profile nil) (kiln-llm-temperature nil)
         (kiln-llm-max-tokens nil) (kiln-llm-cache nil) (kiln-llm-timeouts nil)
         (kiln-llm-auth-source t) (kiln-llm-auth-user "apikey") (kiln-allow-override nil)
         (kiln-repair-attempts 0) (kiln-explain nil) (kiln-limits nil)
         (kiln-validator-profile nil) (kiln-init-options nil)
         (kiln-replace-nul 'auto)
         (kiln-display-directory (expand-file-name "kiln-test-displays/" temporary-file-directory))
         (warning-minimum-log-level :emergency)
         ,@bindings)
     (kiln-test--reset)
     (unwind-protect (progn ,@body)
       (kiln-test--reset))))

(defun kiln-test--model (model)
  "Bindings for MODEL of the fake model server."
  (kiln-test--fake-model)
  (setq kiln-llm-provider "ollama" kiln-llm-url kiln-test--fake-url kiln-llm-model model))

(defmacro kiln-test--buffer (text &rest body)
  "Run BODY in a fresh `python-mode' buffer holding TEXT, with a clean undo list."
  (declare (indent 1) (debug t))
  `(let ((buf (generate-new-buffer "kiln-test.py")))
     (unwind-protect
         (with-current-buffer buf
           (let ((python-indent-guess-indent-offset nil))
             (python-mode))
           (insert ,text)
           (goto-char (point-min))
           (setq buffer-undo-list nil)
           ,@body)
       (when (buffer-live-p buf)
         (with-current-buffer buf (setq kiln--review nil))
         (kill-buffer buf)))))

(defun kiln-test--server-pid ()
  "The running server's pid."
  (process-id (jsonrpc--process kiln--conn)))

(defun kiln-test--intent (text &optional beg end)
  "Ask for TEXT (on BEG..END) and wait for the review to start; return it."
  (let ((req (kiln-intent text beg end)))
    (kiln-test--wait "the proposal" (lambda () (not (memq req kiln--intents))))
    (should kiln--review)
    kiln--review))

(defun kiln-test--settle ()
  "Start the server and wait until its start-up work is done.
A server just started compiles its validator rules on its event loop,
one language per turn; while it does, it reads neither of a program's
pipes, and the order between stdout and stderr is lost (seen with the
ASan build: \"one three two\").  That is the server's to fix; tests
of the order between streams make the rules ready first."
  (dolist (lang '("python" "bash" "javascript"))
    (ignore-errors (jsonrpc-request (kiln--connection) :snippet/validate
                                    (list :language lang :code "x\n") :timeout 30))))

(defun kiln-test--output ()
  "The output buffer's text."
  (with-current-buffer (kiln--output-buffer)
    (buffer-substring-no-properties (point-min) (point-max))))

(defun kiln-test--run-and-wait (&rest args)
  "Call `kiln-run' with ARGS and wait for the run to end; return `kiln-last-run'."
  (let ((run (apply #'kiln-run args)))
    (should run)
    (kiln-test--wait "the run to end" (lambda () (not (eq kiln--run run))))
    kiln-last-run))

(defun kiln-test--face-of (text)
  "The face of the first occurrence of TEXT in the output buffer."
  (with-current-buffer (kiln--output-buffer)
    (save-excursion
      (goto-char (point-min))
      (and (search-forward text nil t)
           (get-text-property (match-beginning 0) 'face)))))

;;; Settings

(require 'cus-edit)
(require 'auth-source)
(declare-function auth-source-forget-all-cached "auth-source" ())

;; issue 36: Anthropic, Bedrock, region and profile could not be set from
;; Emacs, and a key could only be written into the options, in clear.
(ert-deftest kiln-settings-api-key-from-auth-source ()
  "The API key comes from auth-source into initializationOptions, never into custom-file."
  (let* ((authinfo (make-temp-file "kiln-authinfo"))
         (custom (make-temp-file "kiln-custom" nil ".el"))
         (custom-file custom)
         ;; Under -Q customize saves nothing: as if started with an init file.
         (user-init-file custom)
         (auth-sources (list authinfo))
         (auth-source-do-cache nil))
    (require 'auth-source)
    (with-temp-file authinfo
      (insert "machine 127.0.0.1 login apikey password sk-good\n"))
    (unwind-protect
        (kiln-test--with ()
          (kiln-test--fake-model)
          (setq kiln-llm-provider "openai" kiln-llm-url kiln-test--fake-url
                kiln-llm-model "fake-401" kiln-llm-aws-profile "kiln-test-profile")
          (should (equal (kiln--api-key) "sk-good"))
          (should (equal (plist-get (kiln--init-options (kiln--api-key)) :llm)
                         (list :provider "openai" :url kiln-test--fake-url
                               :model "fake-401" :apiKey "sk-good")))
          ;; The server got it: the fake model answers only "Bearer sk-good".
          (kiln-test--buffer "x = 1\n"
            (kiln-test--intent "print a greeting")
            (should (equal (plist-get (car (plist-get kiln--review :hunks)) :new)
                           "print('hello from kiln')\n"))
            ;; No buffer holds the key: the events log is off while one is sent.
            (should-not (cl-some (lambda (b) (with-current-buffer b
                                               (save-excursion
                                                 (goto-char (point-min))
                                                 (search-forward "sk-good" nil t))))
                                 (buffer-list)))
            ;; The AWS profile reached the server's environment.
            (should (string-match-p
                     "\\(\\`\\|\0\\)AWS_PROFILE=kiln-test-profile\0"
                     (with-temp-buffer
                       (insert-file-contents-literally
                        (format "/proc/%d/environ" (kiln-test--server-pid)))
                       (buffer-string))))
            (kiln-reject-all))
          ;; Saved through customize: the settings are there, the key is not.
          (customize-save-variable 'kiln-llm-provider "openai")
          (customize-save-variable 'kiln-llm-model "fake-401")
          (let ((saved (with-temp-buffer (insert-file-contents custom) (buffer-string))))
            (should (string-match-p "kiln-llm-provider" saved))
            (should-not (string-match-p "sk-good" saved)))
          ;; Without the entry, the server has no key and the model says 401.
          (kiln-shutdown)
          (let ((auth-sources nil))
            (should-not (kiln--api-key))
            (kiln-test--buffer "x = 1\n"
              (let ((req (kiln-intent "print a greeting")))
                (kiln-test--wait "the refusal" (lambda () (not (memq req kiln--intents))))
                (should-not kiln--review)
                (should (kiln-test--said "\\`\\[kiln\\] intent failed: .*401"))))))
      (delete-file authinfo)
      (delete-file custom))))

(ert-deftest kiln-settings-every-llm-option ()
  "Every model setting of the server, and allowOverride, reaches initializationOptions."
  (kiln-test--with ((kiln-llm-provider "bedrock") (kiln-llm-model "anthropic.claude-3")
                    (kiln-llm-region "eu-west-1") (kiln-llm-temperature 0.2)
                    (kiln-llm-max-tokens 300) (kiln-llm-cache 'on)
                    (kiln-llm-timeouts '(:idleTimeoutMs 5000 :totalTimeoutMs 90000))
                    (kiln-allow-override 'off) (kiln-validator-profile "strict")
                    (kiln-llm-auth-source nil))
    (let ((o (kiln--init-options (kiln--api-key))))
      (should (equal (plist-get o :llm)
                     '(:provider "bedrock" :model "anthropic.claude-3" :region "eu-west-1"
                                 :temperature 0.2 :maxTokens 300 :cache t
                                 :idleTimeoutMs 5000 :totalTimeoutMs 90000)))
      (should (equal (plist-get o :validator) '(:profile "strict" :allowOverride :json-false))))
    ;; The server takes them (initialize would fail with -32602 otherwise).
    (should (kiln--connection))
    (should (kiln-running-p))
    ;; Each provider of the server is a choice of `kiln-llm-provider'.
    (let ((choices (cl-loop for c in (cdr (get 'kiln-llm-provider 'custom-type))
                            when (eq (car-safe c) 'const) collect (car (last c)))))
      (should (equal (remq nil choices) '("ollama" "openai" "anthropic" "bedrock"))))))

;;; Lifecycle

(ert-deftest kiln-lifecycle-start-once-and-stop ()
  "The server starts on first use, once; `kiln-shutdown' ends it quietly."
  (kiln-test--with ()
    (should-not (kiln-running-p))
    (let ((conn (kiln--connection)))
      (should (kiln-running-p))
      (should (eq conn (kiln--connection)))
      (should (kiln-supports-p "snippet/run"))
      ;; kiln.el offers utf-8 first; kiln takes it.
      (should (equal kiln--encoding "utf-8"))
      (let ((proc (jsonrpc--process conn)))
        (kiln-shutdown)
        (kiln-test--wait "the server to exit" (lambda () (not (process-live-p proc))))
        (should (eq (process-status proc) 'exit))
        (should (equal (process-exit-status proc) 0))
        (accept-process-output nil 0.3)
        (should-not kiln-last-death)))
    (should (memq #'kiln-shutdown kill-emacs-hook))))

(ert-deftest kiln-lifecycle-crash-and-restart ()
  "A server that dies is reported with its stderr, and the next command restarts it."
  (kiln-test--with ()
    (kiln--connection)
    (let ((pid (kiln-test--server-pid)))
      (signal-process pid 'SIGKILL)
      (kiln-test--wait "the death to be reported" (lambda () kiln-last-death) 10)
      (should (string-match-p "killed by signal 9" kiln-last-death))
      (should-not (kiln-running-p))
      ;; The next command starts a new server.
      (kiln-test--buffer "x = 1\n"
        (should (equal (plist-get (kiln-validate) :verdict) "allow")))
      (should (kiln-running-p))
      (should (/= pid (kiln-test--server-pid)))))
  ;; A server that cannot start: what it said on stderr is in the error.
  (kiln-test--with ((kiln-command '("sh" "-c" "echo 'kiln: cannot open the config file' >&2; exit 3")))
    (let ((err (should-error (kiln--connection) :type 'user-error)))
      (should (string-match-p "did not start" (cadr err)))
      (should (string-match-p "cannot open the config file" (cadr err)))))
  (kiln-test--with ((kiln-command '("/nonexistent/kiln")))
    (let ((err (should-error (kiln--connection) :type 'user-error)))
      (should (string-match-p "cannot find the server program" (cadr err))))))

(ert-deftest kiln-lifecycle-death-ends-the-run ()
  "A run in flight when the server dies ends with the reason in the output."
  (kiln-test--with ()
    (kiln-test--buffer "import time\nprint('started', flush=True)\ntime.sleep(30)\n"
      (let ((run (kiln-run)))
        (kiln-test--wait "the program to start"
                         (lambda () (string-match-p "started" (kiln-test--output))))
        (signal-process (kiln-test--server-pid) 'SIGKILL)
        (kiln-test--wait "the run to end" (lambda () (not (eq kiln--run run))) 10)
        (should (string-match-p "\\[the server was killed by signal 9\\]\\|Server died"
                                (kiln-test--output)))))))

;;; Diagnostics

(ert-deftest kiln-flymake-diagnostics ()
  "`kiln-mode' puts the validator's findings on the buffer through Flymake."
  (kiln-test--with ()
    ;; os.system after an emoji: the column is counted right.
    (kiln-test--buffer "import os\nx = \"😀é\"; os.system(\"ls\")\n"
      (kiln-mode 1)
      (should (memq #'kiln-flymake flymake-diagnostic-functions))
      (should flymake-mode)
      (flymake-start)
      (kiln-test--wait "diagnostics" (lambda () (flymake-diagnostics)))
      (let ((d (car (flymake-diagnostics))))
        (should (eq (flymake-diagnostic-type d) :error))
        (should (string-match-p "PY-OS-PROCESS" (flymake-diagnostic-text d)))
        ;; issue 36: with the rule's explanation, as VS Code's Problems view.
        (should (string-match-p "\\[PY-OS-PROCESS\\]: os\\.system, .* run or control other programs"
                                (flymake-diagnostic-text d)))
        (should (equal (buffer-substring (flymake-diagnostic-beg d) (flymake-diagnostic-end d))
                       "os.system")))
      ;; Fixed: the diagnostics go away.
      (erase-buffer)
      (insert "print('ok')\n")
      (flymake-start)
      (kiln-test--wait "no diagnostics" (lambda () (null (flymake-diagnostics))))
      ;; A syntax error.
      (erase-buffer)
      (insert "x = 1\nif x\n")
      (flymake-start)
      (kiln-test--wait "the syntax error" (lambda () (flymake-diagnostics)))
      (let ((d (car (flymake-diagnostics))))
        (should (string-match-p "syntax" (flymake-diagnostic-text d)))
        (should (= (line-number-at-pos (flymake-diagnostic-beg d)) 2)))
      (kiln-mode -1)
      (should-not (memq #'kiln-flymake flymake-diagnostic-functions)))))

(ert-deftest kiln-validate-now ()
  "`kiln-validate' answers with the verdict at once."
  (kiln-test--with ()
    (kiln-test--buffer "import socket\nsocket.socket()\n"
      (let ((r (kiln-validate)))
        (should (equal (plist-get r :verdict) "deny"))
        (should (kiln-test--said "verdict deny"))))
    (with-temp-buffer
      (fundamental-mode)
      (should-error (kiln-validate) :type 'user-error))))

;;; Doctor

(ert-deftest kiln-doctor-report-with-fixes ()
  "`kiln-doctor' shows every item aligned, a closed endpoint degraded with its fix."
  (kiln-test--with ()
    (setq kiln-llm-provider "ollama" kiln-llm-url "http://127.0.0.1:9/\e[31mred")
    (let* ((report (kiln-doctor))
           (text (with-current-buffer kiln-doctor-buffer-name (buffer-string))))
      (should (= (length (plist-get report :items)) 11))
      (dolist (name '("kernel" "user namespaces" "seccomp" "Landlock" "sandbox box" "workspace"
                      "cgroups" "Python" "Python modules" "Node" "model endpoint"))
        (should (string-match-p (concat "^" (regexp-quote name) " +\\(ok\\|degraded\\|missing\\) ")
                                text)))
      (should (string-match-p "^model endpoint +degraded +ollama http://127.0.0.1:9/\\^\\[\\[31mred" text))
      (should-not (string-match-p "\e" text))
      (should (string-match-p "fix: check llm.url" text))
      (should (kiln-test--said "doctor: not ok: .*model endpoint")))))

;;; Intents and their review

(ert-deftest kiln-intent-streams-then-reviews ()
  "The code streams into the preview, progress shows, then the hunk is reviewed."
  (kiln-test--with ()
    (kiln-test--model "fake-slow")
    (kiln-test--buffer "x = 1\ny = 2\n"
      (let* ((statuses nil) (preview-before nil) (in-buffer nil)
             (req (kiln-intent "print a greeting")))
        (kiln-test--wait "the proposal"
                         (lambda ()
                           (when kiln--status
                             (cl-pushnew kiln--status statuses :test #'equal))
                           ;; issue 36: the code streams at its place in
                           ;; the buffer too (an overlay, nothing written).
                           (dolist (o (overlays-in (point-min) (point-max)))
                             (when (and (overlay-get o 'kiln-preview)
                                        (memq req kiln--intents)
                                        (string-match-p "\\`kiln: the model is writing.*\n.*print"
                                                        (overlay-get o 'before-string))
                                        (= (overlay-start o) 7))
                               (setq in-buffer t)))
                           (let ((p (get-buffer kiln-preview-buffer-name)))
                             (when (and p (memq req kiln--intents)
                                        (string-match-p "print" (with-current-buffer p
                                                                  (buffer-string))))
                               (setq preview-before t)))
                           (not (memq req kiln--intents))))
        (should preview-before)
        (should in-buffer)
        (should-not (cl-some (lambda (o) (overlay-get o 'kiln-preview))
                             (overlays-in (point-min) (point-max))))
        (should (member "writing" statuses))
        ;; The mode line shows `kiln--status' (format-mode-line gives ""
        ;; in batch, so the construct is checked instead).
        (should (member kiln--mode-line-entry mode-line-misc-info))
        (should-not kiln--status)
        ;; Nothing is written before the review.
        (should (equal (buffer-string) "x = 1\ny = 2\n"))
        (should kiln--review)
        (let ((hunks (plist-get kiln--review :hunks)))
          (should (= (length hunks) 1))
          (should (equal (plist-get (car hunks) :new) "print('hello from kiln')\n"))
          ;; Shown as an overlay with the added line.
          (let ((ov (plist-get (car hunks) :overlay)))
            (should (overlayp ov))
            (should (string-match-p "hello from kiln" (overlay-get ov 'before-string)))))
        (kiln-accept-all)
        (should (equal (buffer-string) "x = 1\nprint('hello from kiln')\ny = 2\n"))
        (should-not kiln--review)
        (should-not (cl-some (lambda (o) (overlay-get o 'kiln-hunk))
                             (overlays-in (point-min) (point-max))))))))

(ert-deftest kiln-intent-accept-one-reject-another ()
  "Accept one hunk, reject another: the buffer has exactly the one; one undo restores."
  (kiln-test--with ()
    (kiln-test--model "fake-long")
    (let* ((want (kiln-test--long-program))
           (lines (split-string want "\n"))
           (mine-lines (copy-sequence lines)))
      ;; Two places differ from what the model will write.
      (setf (nth 5 mine-lines) "def stats(values):  # mine")
      (setf (nth (- (length lines) 2) mine-lines) "print('mine')")
      (let ((mine (string-join mine-lines "\n")))
        (kiln-test--buffer mine
          (let ((rv (kiln-test--intent "compute stats" (point-min) (point-max))))
            (should (= (length (plist-get rv :hunks)) 2))
            ;; The first hunk, at point.
            (goto-char (point-min))
            (kiln-next-hunk)
            (should (equal (line-number-at-pos) 6))
            (kiln-accept-hunk)
            (should (string-match-p "^def stats(values):$" (buffer-string)))
            (should (string-match-p "^print('mine')$" (buffer-string)))
            (should kiln--review)
            (kiln-reject-hunk)
            (should-not kiln--review)
            (should (kiln-test--said "1 of 2 hunks accepted"))
            (let ((expect (copy-sequence lines)))
              (setf (nth (- (length lines) 2) expect) "print('mine')")
              (should (equal (buffer-string) (string-join expect "\n"))))
            ;; One undo step takes the whole proposal back.
            (undo-boundary)
            (let ((last-command nil)) (undo))
            (should (equal (buffer-string) mine))))))))

;; issue 36: after a review that rejected hunks, `kiln-run' ran the
;; model's whole proposal, the rejected hunks included.
(ert-deftest kiln-run-after-partial-review-runs-the-buffer ()
  "Rejected hunks (one deleting a line, one adding one) never run; the accepted one does."
  (kiln-test--with ()
    (kiln-test--model "fake-long")
    (let* ((want (kiln-test--long-program))
           (lines (split-string want "\n"))
           ;; The model deletes a line of mine (hunk 1), changes one
           ;; (hunk 2) and adds its last line (hunk 3).
           (mine-lines (append (cl-subseq lines 0 3) (list "print('mine kept')")
                               (cl-subseq lines 3 13)
                               (list "data_0 = [x * 100 for x in range(10)]")
                               (cl-subseq lines 14 29) (list "")))
           (mine (string-join mine-lines "\n")))
      (should (string-match-p "^print('median of means'" want))
      (kiln-test--buffer mine
        (let ((rv (kiln-test--intent "compute stats" (point-min) (point-max))))
          (should (= (length (plist-get rv :hunks)) 3))
          (goto-char (point-min))
          (kiln-next-hunk)
          (should (looking-at-p "print('mine kept')"))
          (kiln-reject-hunk)
          (kiln-next-hunk)
          (should (looking-at-p "data_0 = \\[x \\* 100"))
          (kiln-accept-hunk)
          ;; Run mid-review: the pending hunk is not in the buffer, so
          ;; it does not run either.
          (kiln-test--run-and-wait)
          (should (string-match-p
                   (concat "\\`kiln run: kiln-test\\.py\\(<[0-9]+>\\)? as you kept it "
                           "(proposal p[0-9]+: hunk 2 accepted; 1 rejected; 3 still pending, not run)\n"
                           "mine kept\n4\\.50 2\\.87\n")
                   (kiln-test--output)))
          (should-not (string-match-p "median of means" (kiln-test--output)))
          (should kiln--review)
          (kiln-reject-hunk)
          (should-not kiln--review)
          (should (kiln-test--said "review done: 1 of 3 hunks accepted"))
          (should (equal (buffer-string)
                         (string-join (append (cl-subseq lines 0 3) (list "print('mine kept')")
                                              (cl-subseq lines 3 29) (list ""))
                                      "\n")))
          (kiln-test--run-and-wait)
          (let ((out (kiln-test--output)))
            (should (string-match-p
                     (concat "\\`kiln run: kiln-test\\.py\\(<[0-9]+>\\)? as you kept it "
                             "(proposal p[0-9]+: hunk 2 accepted; 1, 3 rejected)\n"
                             "mine kept\n"
                             "4\\.50 2\\.87\n9\\.00 5\\.74\n13\\.50 8\\.62\n18\\.00 11\\.49\n"
                             "\\[exit 0, [0-9]+ ms\\]\n\\'")
                     out))
            ;; Neither rejected hunk ran: the deleted line printed, the
            ;; added one did not.
            (should-not (string-match-p "median of means" out))))))))

;; issue 36, as it was seen: after a review that ended with hunk 1
;; rejected and the others accepted, `kiln-run' approved the model's
;; whole proposal.  A review that is over runs what the buffer holds.
(defun kiln-test--three-hunk-text ()
  "The model's 30 lines and mine: the model deletes a line of mine
\(hunk 1), changes one (hunk 2) and adds its last line (hunk 3).
Return (MODEL-LINES . MINE)."
  (let* ((lines (split-string (kiln-test--long-program) "\n"))
         (mine (append (cl-subseq lines 0 3) (list "print('mine kept')")
                       (cl-subseq lines 3 13)
                       (list "data_0 = [x * 100 for x in range(10)]")
                       (cl-subseq lines 14 29) (list ""))))
    (cons lines (string-join mine "\n"))))

(defun kiln-test--review-then-run (decisions)
  "Ask for the three-hunk proposal, decide its hunks, run; return the output.
DECISIONS is a list of `accept'/`reject', one per hunk, in order."
  (should (= (length (plist-get (kiln-test--intent "compute stats" (point-min) (point-max))
                                :hunks))
             3))
  (goto-char (point-min))
  (dolist (d decisions)
    (kiln-next-hunk)
    (if (eq d 'accept) (kiln-accept-hunk) (kiln-reject-hunk)))
  (should-not kiln--review)
  (should (kiln-test--said "review done: 2 of 3 hunks accepted"))
  (kiln-test--run-and-wait)
  (kiln-test--output))

(ert-deftest kiln-run-after-review-rejected-added-hunk ()
  "Hunks 1 and 2 accepted, hunk 3 (a line the model adds) rejected: it never runs."
  (kiln-test--with ()
    (kiln-test--model "fake-long")
    (let ((lm (kiln-test--three-hunk-text)))
      (kiln-test--buffer (cdr lm)
        (let ((out (kiln-test--review-then-run '(accept accept reject))))
          (should (string-match-p
                   (concat "\\`kiln run: kiln-test\\.py\\(<[0-9]+>\\)? as you kept it "
                           "(proposal p[0-9]+: hunks 1, 2 accepted; 3 rejected)\n"
                           "4\\.50 2\\.87\n9\\.00 5\\.74\n13\\.50 8\\.62\n18\\.00 11\\.49\n"
                           "\\[exit 0, [0-9]+ ms\\]\n")
                   out))
          (should-not (string-match-p "median of means" out))
          (should-not (string-match-p "mine kept" out)))))))

(ert-deftest kiln-run-after-review-rejected-deleted-hunk ()
  "Hunk 1 (a line the model deletes) rejected, 2 and 3 accepted: the line stays and runs."
  (kiln-test--with ()
    (kiln-test--model "fake-long")
    (let ((lm (kiln-test--three-hunk-text)))
      (kiln-test--buffer (cdr lm)
        (let ((out (kiln-test--review-then-run '(reject accept accept))))
          (should (string-match-p "^print('mine kept')$" (buffer-string)))
          (should (string-match-p
                   (concat "\\`kiln run: kiln-test\\.py\\(<[0-9]+>\\)? as you kept it "
                           "(proposal p[0-9]+: hunks 2, 3 accepted; 1 rejected)\n"
                           "mine kept\n4\\.50 2\\.87\n")
                   out))
          (should (string-match-p "median of means" out))
          (should-not (string-match-p "kiln run: proposal" out)))))))

(ert-deftest kiln-intent-accept-all-one-undo ()
  "Accept-all of several hunks is one undo step."
  (kiln-test--with ()
    (kiln-test--model "fake-long")
    (let* ((want (kiln-test--long-program))
           (lines (split-string want "\n")))
      (setf (nth 1 lines) "# one")
      (setf (nth 14 lines) "# two")
      (setf (nth (- (length lines) 2) lines) "# three")
      (let ((mine (string-join lines "\n")))
        (kiln-test--buffer mine
          (let ((rv (kiln-test--intent "compute stats" (point-min) (point-max))))
            (should (= (length (plist-get rv :hunks)) 3))
            ;; The ediff review's proposed text is the model's program.
            (should (equal (kiln--proposed-text) want))
            (kiln-accept-all)
            (should (equal (buffer-string) want))
            (undo-boundary)
            (let ((last-command nil)) (undo))
            (should (equal (buffer-string) mine))))))))

(defvar ediff-window-setup-function)
(declare-function ediff-next-difference "ediff-util" (&optional arg))
(declare-function ediff-copy-B-to-A "ediff-util" (arg))
(declare-function ediff-really-quit "ediff-util" (reverse-default-keep-variants))

(ert-deftest kiln-intent-ediff ()
  "`kiln-ediff' compares the buffer with the proposal; what is copied lands; quit ends it."
  (kiln-test--with ()
    (kiln-test--model "fake-coder")
    (require 'ediff)
    (kiln-test--buffer "x = 1\ny = 2\n"
      (let ((buffer (current-buffer))
            (ediff-window-setup-function #'ediff-setup-windows-plain))
        (kiln-test--intent "print a greeting")
        (let ((proposed (kiln-ediff)))
          (should (equal (with-current-buffer proposed (buffer-string))
                         "x = 1\nprint('hello from kiln')\ny = 2\n"))
          (with-current-buffer (get-buffer "*Ediff Control Panel*")
            (ediff-next-difference)
            (ediff-copy-B-to-A nil)
            (ediff-really-quit nil))
          (with-current-buffer buffer
            (should (equal (buffer-string) "x = 1\nprint('hello from kiln')\ny = 2\n"))
            (should-not kiln--review))
          (should-not (buffer-live-p proposed)))))))

(ert-deftest kiln-intent-stale-buffer-never-written ()
  "A buffer changed since the request is never written."
  (kiln-test--with ()
    (kiln-test--model "fake-coder")
    ;; Changed after the proposal came: accepting refuses.
    (kiln-test--buffer "x = 1\ny = 2\n"
      (kiln-test--intent "print a greeting")
      (goto-char (point-max))
      (insert "z = 3\n")
      (let ((err (should-error (kiln-accept-hunk) :type 'user-error)))
        (should (string-match-p "changed since the request" (cadr err))))
      (should (equal (buffer-string) "x = 1\ny = 2\nz = 3\n"))
      (should-not kiln--review)
      (should-error (kiln-accept-all) :type 'user-error)
      (should (equal (buffer-string) "x = 1\ny = 2\nz = 3\n")))
    ;; Changed while the model wrote: the proposal is not shown at all.
    (kiln-test--model "fake-slow")
    (kiln-test--buffer "x = 1\ny = 2\n"
      (let ((req (kiln-intent "print a greeting")))
        (goto-char (point-max))
        (insert "z = 3\n")
        (kiln-test--wait "the proposal" (lambda () (not (memq req kiln--intents))))
        (should-not kiln--review)
        (should (kiln-test--said "changed while the model wrote"))
        (should (equal (buffer-string) "x = 1\ny = 2\nz = 3\n"))))))

(ert-deftest kiln-intent-denied-proposal ()
  "A proposal the validator denies is shown, marked, and `kiln-run' will not run it."
  (kiln-test--with ()
    (kiln-test--model "fake-deny")
    (kiln-test--buffer "x = 1\n"
      (let* ((rv (kiln-test--intent "fetch a page"))
             (h (car (plist-get rv :hunks))))
        (should (equal (plist-get (plist-get rv :proposal) :verdict) "deny"))
        (should (string-match-p "verdict deny" (overlay-get (plist-get h :overlay) 'before-string)))
        (should (string-match-p "error proposed line" (overlay-get (plist-get h :overlay)
                                                                   'before-string)))
        (kiln-accept-all)
        (should (string-match-p "socket" (buffer-string)))
        (let ((last (kiln-test--run-and-wait)))
          (should (plist-get last :error))
          (should (string-match-p "\\[not run: the validator denied it: .*PY-IMPORT-NETWORK"
                                  (kiln-test--output))))))))

;; issue 36: a denied run told the person to edit JSON.  Now every rule
;; is named, and where kiln's config allows an override (the server says
;; data.overrideAllowed), the run is offered again after one more question.
(defun kiln-test--config (json)
  "A config file holding JSON; return its name."
  (let ((file (make-temp-file "kiln-config" nil ".json")))
    (with-temp-file file (insert json))
    file))

(defconst kiln-test--denied-code "import socket\nsocket.socket()\nprint('past the deny')\n"
  "Code the validator denies (PY-IMPORT-NETWORK and the call).")

(ert-deftest kiln-run-denied-run-anyway ()
  "Where the config allows an override, a denied run names its rules and runs after one more yes."
  (let ((config (kiln-test--config "{\"validator\": {\"allowOverride\": true}}"))
        (asked nil) (answer nil))
    (unwind-protect
        (kiln-test--with ((kiln-command (list kiln-test--bin "--config" config)))
          (cl-letf (((symbol-function 'yes-or-no-p)
                     (lambda (prompt) (push prompt asked) answer)))
            (kiln-test--buffer kiln-test--denied-code
              (should (plist-get (kiln-test--run-and-wait) :error))
              (let ((out (kiln-test--output)))
                (should (string-match-p "^\\[not run: the validator denied it: " out))
                (should (string-match-p "^\\[denied by [0-9]+ rules?:\\]$" out))
                (should (string-match-p "^  PY-IMPORT-NETWORK line 1: " out))
                (should (string-match-p "^  \\[run anyway\\] (M-x kiln-run-anyway: kiln's config allows an override)$" out))
                (should-not (string-match-p "past the deny" out)))
              ;; No: nothing runs.
              (kiln-run-anyway)
              (should (string-match-p "\\`Run the code kiln's validator denied (PY-IMPORT-NETWORK.*) anyway\\? \\'"
                                      (car asked)))
              (should-not kiln--run)
              (should-not (string-match-p "past the deny" (kiln-test--output)))
              ;; Yes, through the button: it runs, said so in its header.
              (setq answer t)
              (kiln-test--push "[denied by" "run anyway")
              (should (= (length asked) 2))
              (should kiln--run)
              (let ((run kiln--run))
                (kiln-test--wait "the run to end" (lambda () (not (eq kiln--run run)))))
              (let ((out (kiln-test--output)))
                (should (string-match-p "\\`kiln run: kiln-test\\.py\\(<[0-9]+>\\)?, run anyway past the validator's deny (PY-IMPORT-NETWORK" out))
                (should (string-match-p "^past the deny$" out)))
              ;; Once: the offer is used up.
              (should-error (kiln-run-anyway) :type 'user-error))))
      (delete-file config))))

(ert-deftest kiln-run-denied-no-override ()
  "Where the config does not allow an override, no offer: the rules, and how to allow it."
  (let ((config (kiln-test--config "{\"validator\": {\"allowOverride\": false}}")))
    (unwind-protect
        (kiln-test--with ((kiln-command (list kiln-test--bin "--config" config)))
          (kiln-test--buffer kiln-test--denied-code
            (kiln-test--run-and-wait)
            (let ((out (kiln-test--output)))
              (should (string-match-p "^  PY-IMPORT-NETWORK line 1: " out))
              (should-not (string-match-p "\\[run anyway\\]" out))
              (should (string-match-p (regexp-quote "[to be able to run it anyway: set \"validator\": {\"allowOverride\": true} in kiln's config file, then M-x kiln-restart]") out)))
            (should-error (kiln-run-anyway) :type 'user-error)
            (should-not (string-match-p "past the deny" (kiln-test--output)))))
      (delete-file config)))
  ;; A rule's message with control characters shows them, never acts on them.
  (kiln-test--with ()
    (let ((kiln--run (list :kind 'snippet)))
      (kiln--output-start "denied")
      (kiln--offer-override kiln--run
                            (list :kind "denied" :overrideAllowed :json-false
                                  :diagnostics
                                  (vector (list :code "X-RULE\e[2J"
                                                :message "bad\e[31m red\u202e"
                                                :range (list :start (list :line 2 :character 0))))))
      (should (string-match-p (regexp-quote "  X-RULE^[[2J line 3: bad^[[31m red<U+202E>\n")
                              (kiln-test--output))))))

;; issue 36: the model's prose was shown nowhere, and there was no
;; history of intents, repairs and runs.
(defun kiln-test--conversation ()
  "The conversation buffer's text."
  (with-current-buffer (kiln--conversation-buffer)
    (buffer-substring-no-properties (point-min) (point-max))))

(ert-deftest kiln-conversation-shows-each-piece ()
  "The conversation has the intent, the prose, the code and verdict, the repair, output, displays, changes, ledger."
  (kiln-test--with ((kiln-repair-attempts 3) (kiln-auto-repair t) (kiln-explain t))
    (when (get-buffer kiln-conversation-buffer-name) (kill-buffer kiln-conversation-buffer-name))
    (kiln-test--model "fake-repair")
    (kiln-test--in-project
      (kiln-test--buffer ""
        (kiln-test--intent "sum the numbers")
        (kiln-accept-all)
        (should (eq (plist-get (plist-get (kiln-test--run-and-wait) :result) :ok) t))
        (let ((c (kiln-test--conversation)))
          ;; The intent, the model's prose, the code with its verdict.
          (should (string-match-p "^\\* intent (kiln-test\\.py\\(<[0-9]+>\\)?): sum the numbers$" c))
          (should (string-match-p "^\\*\\* the model says\nIt prints the result\\.\n\\*\\* proposal" c))
          (should (string-match-p "^\\*\\* proposal p1, verdict allow\n  | total = 0\n" c))
          (should (string-match-p "^  | print(totl)$" c))
          (should (string-match-p "^  tokens: [0-9]+ prompt, [0-9]+ completion$" c))
          ;; The run: the failure, the repair with the model's words, its code.
          (should (string-match-p "^\\*\\* run: proposal p1 (kiln-test\\.py" c))
          (should (string-match-p "NameError" c))
          (should (string-match-p "^\\*\\*\\* repair (attempt 2): p2, verdict allow\n  | total = 0\n" c))
          (should (string-match-p "^  | print(total)$" c))
          ;; Its output, the explanation of the run, and its ledger.
          (should (string-match-p "^3$" c))
          (should (string-match-p "It added the numbers and printed the total\\." c))
          (should (string-match-p "^  ledger: [0-9]+ ms, CPU [0-9]+ ms, peak memory [0-9.]+ [KMG]iB, tokens [0-9]+ prompt \\+ [0-9]+ completion$" c))
          ;; The order is the story's.
          (should (< (string-match "sum the numbers" c) (string-match "print(totl)" c)
                     (string-match "^\\*\\* run: " c) (string-match "print(total)" c)
                     (string-match "^\\*\\*\\* output" c) (string-match "NameError" c)
                     (string-match "^3$" c) (string-match "  ledger: " c)))))
      ;; A run that leaves a picture and writes a file in the project.
      (kiln-test--buffer (concat (car (split-string kiln-test--binary-code "open('monthly.png'"))
                                 "open('/work/out/plot.png', 'wb').write(png)\n"
                                 "open('notes.txt', 'w').write('n\\n')\n"
                                 "print('saved')\n")
        (kiln-test--run-and-wait)
        (let* ((file (car (plist-get kiln-last-run :images)))
               (c (kiln-test--conversation)))
          (should (string-match-p "^\\*\\* run: kiln-test\\.py" c))
          (should (string-match-p "^artifact plot\\.png (image/png, [0-9]+ bytes):$" c))
          (should (string-match-p "^  created  notes\\.txt (2 bytes)\n    \\[review\\] \\[apply\\] \\[discard\\] $" c))
          (should (string-match-p "^saved$" c))
          ;; The picture: its file, as a button (and the image itself where
          ;; this Emacs can show one).
          (with-current-buffer (kiln--conversation-buffer)
            (goto-char (point-min))
            (should (search-forward file nil t))
            (should (button-at (match-beginning 0)))))
        (kiln-conversation)
        (should (eq (window-buffer) (kiln--conversation-buffer)))))))

(ert-deftest kiln-conversation-ask-again ()
  "From the conversation, the next intent is asked in the last intent's buffer."
  (kiln-test--with ()
    (when (get-buffer kiln-conversation-buffer-name) (kill-buffer kiln-conversation-buffer-name))
    (kiln-test--model "fake-coder")
    (kiln-test--buffer "x = 1\n"
      (let ((buf (current-buffer)))
        (kiln-test--intent "print a greeting")
        (kiln-reject-all)
        (with-temp-buffer
          (let ((req (with-current-buffer (kiln--conversation-buffer)
                       (kiln-conversation-ask "print it again"))))
            (should (eq (plist-get req :buffer) buf))
            (kiln-test--wait "the proposal" (lambda () (not (memq req kiln--intents))))))
        (should (buffer-local-value 'kiln--review buf))
        (let ((c (kiln-test--conversation)))
          (should (string-match-p "^\\* intent (kiln-test\\.py\\(<[0-9]+>\\)?): print a greeting$" c))
          (should (string-match-p "^\\* intent (kiln-test\\.py\\(<[0-9]+>\\)?): print it again$" c))
          (should (= (kiln-test--count "^\\*\\* proposal p[0-9]+, verdict allow$" c) 2)))))))

(ert-deftest kiln-intent-cancel ()
  "`kiln-cancel' stops an intent in flight; no review follows."
  (kiln-test--with ()
    (kiln-test--model "fake-slow")
    (kiln-test--buffer "x = 1\n"
      (kiln-intent "print a greeting")
      (should kiln--intents)
      (kiln-cancel)
      (should-not kiln--intents)
      (should-not (cl-some (lambda (o) (overlay-get o 'kiln-preview))
                           (overlays-in (point-min) (point-max))))
      (accept-process-output nil 1.5)
      (should-not kiln--review)
      (should (equal (buffer-string) "x = 1\n")))))

;;; Runs

(ert-deftest kiln-run-streams-in-order ()
  "Output streams into *kiln-output* in order, stderr in its face, with the exit status."
  (kiln-test--with ()
    (kiln-test--buffer (concat "import sys, time\n"
                               "print('one', flush=True)\n"
                               "time.sleep(0.1)\n"
                               "sys.stderr.write('two\\n'); sys.stderr.flush()\n"
                               "time.sleep(0.1)\n"
                               "print('three', flush=True)\n"
                               "time.sleep(0.3)\n"
                               "print('four')\n"
                               "sys.exit(3)\n")
      (kiln-test--settle)
      (let* ((run (kiln-run))
             (seen-three-before-end nil))
        (kiln-test--wait "the run to end"
                         (lambda ()
                           (when (and (eq kiln--run run)
                                      (string-match-p "three" (kiln-test--output)))
                             (setq seen-three-before-end t))
                           (not (eq kiln--run run))))
        ;; It streamed: "three" was there while the program still ran.
        (should seen-three-before-end)
        (let ((out (kiln-test--output)))
          (should (equal (replace-regexp-in-string "[0-9]+ ms" "N ms" out)
                         "kiln run: kiln-test.py\none\ntwo\nthree\nfour\n[exit 3, N ms]\n")))
        (should (eq (kiln-test--face-of "two") 'kiln-stderr))
        (should (eq (kiln-test--face-of "one") 'kiln-stdout))
        (should (eq (kiln-test--face-of "[exit 3") 'kiln-failure))))))

(ert-deftest kiln-run-queued-then-running ()
  "A run waiting for a sandbox slot says queued in the mode line and output."
  ;; One slot: a first run (sent here, not through `kiln-run') holds it,
  ;; so `kiln-run''s run waits in the server's queue (run/status).
  (kiln-test--with ((kiln-init-options '(:sandbox (:maxConcurrentRuns 1))))
    (kiln-test--buffer "print('second')\n"
      (let ((first 'pending) (statuses nil))
        (jsonrpc-async-request (kiln--connection) :snippet/run
                               (list :language "bash" :code "sleep 3")
                               :success-fn (lambda (r) (setq first r))
                               :error-fn (lambda (e) (setq first e)))
        (let ((run (kiln-run)))
          (kiln-test--wait "the run to be queued" (lambda () (plist-get run :queued)))
          (should (equal kiln--status "queued (1st)"))
          (should (string-suffix-p "[queued: 1st in line for a sandbox slot; 1 of 1 busy]\n"
                                   (kiln-test--output)))
          (should (eq first 'pending))
          (kiln-test--wait "the run to end"
                           (lambda ()
                             (when kiln--status (cl-pushnew kiln--status statuses :test #'equal))
                             (not (eq kiln--run run))))
          (should (member "running" statuses))
          ;; How it ended stays in the mode line a while.
          (should (equal kiln--status "done"))
          (should (plist-get first :runId))
          (should (equal (replace-regexp-in-string "[0-9]+ ms" "N ms" (kiln-test--output))
                         (concat "kiln run: kiln-test.py\n"
                                 "[queued: 1st in line for a sandbox slot; 1 of 1 busy]\n"
                                 "[running: a slot is free]\n"
                                 "second\n[exit 0, N ms]\n")))
          (should (equal (mapcar #'kiln--ordinal '(1 2 3 4 11 12 13 21 22 23 101 111))
                         '("1st" "2nd" "3rd" "4th" "11th" "12th" "13th" "21st" "22nd"
                           "23rd" "101st" "111th"))))))))

;; issue 36: the mode line said "kiln:thinking" twice (kiln-mode's
;; lighter and `mode-line-misc-info'), and said nothing when a run ended.
(defun kiln-test--render (x)
  "X, a mode-line construct, as text: the parts kiln's constructs use.
`format-mode-line' answers \"\" in batch, so this renders strings,
symbols, (:eval FORM), (SYMBOL THEN ELSE) and lists."
  (cond ((stringp x) x)
        ((null x) "")
        ((symbolp x) (let ((v (and (boundp x) (symbol-value x))))
                       (if (stringp v) v (kiln-test--render v))))
        ((and (consp x) (eq (car x) :eval)) (kiln-test--render (eval (cadr x) t)))
        ((and (consp x) (eq (car x) :propertize)) (kiln-test--render (cadr x)))
        ((and (consp x) (symbolp (car x)))
         (if (and (boundp (car x)) (symbol-value (car x)))
             (kiln-test--render (cadr x))
           (kiln-test--render (car (cddr x)))))
        ((consp x) (mapconcat #'kiln-test--render x ""))
        (t "")))

(defun kiln-test--mode-line ()
  "The minor modes' lighters and `mode-line-misc-info' of this buffer, as text."
  (concat (mapconcat (lambda (e) (if (and (boundp (car e)) (symbol-value (car e)))
                                     (kiln-test--render (cadr e))
                                   ""))
                     minor-mode-alist "")
          (kiln-test--render mode-line-misc-info)))

(defun kiln-test--count (re text)
  "How many times RE matches in TEXT."
  (let ((n 0) (i 0))
    (while (string-match re text i) (setq n (1+ n) i (match-end 0)))
    n))

(ert-deftest kiln-status-mode-line-once-and-done ()
  "The mode line says kiln's status once, with or without `kiln-mode', and how a run ended."
  (kiln-test--with ((kiln-status-done-seconds 0.5))
    (let ((mode-line-misc-info (copy-sequence mode-line-misc-info)))
      (kiln-test--buffer "print('ok')\n"
        (let ((kiln-flymake nil)) (kiln-mode 1))
        (kiln--show-status)
        (setq kiln--status "thinking")
        (should (= (kiln-test--count "kiln:thinking" (kiln-test--mode-line)) 1))
        (with-temp-buffer
          (should (= (kiln-test--count "kiln:thinking" (kiln-test--mode-line)) 1)))
        (setq kiln--status nil)
        (should (= (kiln-test--count "kiln:" (kiln-test--mode-line)) 0))
        ;; A run: running, then done, then the mode line is quiet again.
        (let ((statuses nil) (run (kiln-run)))
          (kiln-test--wait "the run to end"
                           (lambda ()
                             (when kiln--status (cl-pushnew kiln--status statuses :test #'equal))
                             (not (eq kiln--run run))))
          (should (member "running" statuses))
          (should (equal kiln--status "done"))
          (should (= (kiln-test--count "kiln:done" (kiln-test--mode-line)) 1))
          (kiln-test--wait "the status to clear" (lambda () (null kiln--status)) 5))
        (erase-buffer)
        (insert "import sys\nsys.exit(3)\n")
        (kiln-test--run-and-wait)
        (should (equal kiln--status "failed (exit 3)"))
        (kiln-mode -1)))))

(ert-deftest kiln-run-region-and-streams-apart ()
  "`kiln-run' of a region runs only it; lines of two streams never splice."
  (kiln-test--with ()
    ;; "n =": a bare last expression would be displayed (its value, 2).
    (kiln-test--buffer "raise SystemExit(9)\nimport sys\nsys.stdout.write('a'); sys.stdout.flush(); n = sys.stderr.write('b\\n')\n"
      (forward-line 1)
      (kiln-test--settle)
      (kiln-test--run-and-wait (point) (point-max))
      (should (string-match-p "kiln run: kiln-test.py:2-4\na\nb\n\\[exit 0, " (kiln-test--output))))))

(ert-deftest kiln-run-image-artifact ()
  "A PNG the program leaves in /work/out is shown in the output buffer."
  (kiln-test--with ()
    (kiln-test--buffer (concat "import struct, zlib\n"
                               "def chunk(t, d):\n"
                               "    c = struct.pack('>I', len(d)) + t + d\n"
                               "    return c + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)\n"
                               "raw = b''.join(b'\\x00' + b'\\xff\\x00\\x00' * 4 for _ in range(4))\n"
                               "png = (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 4, 4, 8, 2, 0, 0, 0))\n"
                               "       + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))\n"
                               "open('/work/out/plot.png', 'wb').write(png)\n"
                               "print('saved')\n")
      (let* ((last (kiln-test--run-and-wait))
             (art (car (plist-get last :artifacts)))
             (file (car (plist-get last :images))))
        (should (equal (plist-get art :name) "plot.png"))
        (should (equal (plist-get art :mimeType) "image/png"))
        (should (string-match-p "artifact plot.png (image/png, [0-9]+ bytes)" (kiln-test--output)))
        ;; The bytes are on disk for viewers, and the buffer shows the
        ;; image itself where this Emacs can, a button to the file where not.
        (should (and file (file-exists-p file)))
        (should (equal (with-temp-buffer
                         (set-buffer-multibyte nil)
                         (insert-file-contents-literally file)
                         (buffer-substring 1 9))
                       "\211PNG\r\n\032\n"))
        (with-current-buffer (kiln--output-buffer)
          (if (image-type-available-p 'png)
              (let ((m (text-property-search-forward 'display nil
                                                     (lambda (_ v) (eq (car-safe v) 'image)))))
                (should m)
                ;; The image made by create-image holds the program's bytes.
                (should (equal (plist-get (cdr (prop-match-value m)) :type) 'png))
                (should (equal (plist-get (cdr (prop-match-value m)) :data)
                               (with-temp-buffer
                                 (set-buffer-multibyte nil)
                                 (insert-file-contents-literally file)
                                 (buffer-string)))))
            (should (string-match-p "this Emacs cannot show images" (buffer-string)))
            (goto-char (point-min))
            (should (search-forward file nil t))
            (should (button-at (match-beginning 0)))))
        (delete-file file)))))

;;; Workspace changes

(defconst kiln-test--binary-code
  (concat "import struct, zlib\n"
          "def chunk(t, d):\n"
          "    c = struct.pack('>I', len(d)) + t + d\n"
          "    return c + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)\n"
          "raw = b''.join(b'\\x00' + b'\\xff\\x00\\x00' * 4 for _ in range(4))\n"
          "png = (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 4, 4, 8, 2, 0, 0, 0))\n"
          "       + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))\n"
          "open('monthly.png', 'wb').write(png)\n"
          "open('blob.bin', 'wb').write(b'\\x00\\x01kiln\\x00' * 100)\n"
          "open('sales.csv', 'a').write('2024-03,30\\n')\n"
          "print('saved')\n")
  "A run that saves a real PNG (made by hand, as matplotlib's savefig
would write one), writes bytes with NULs and appends a row to a CSV.")

(defconst kiln-test--sales "month,total\n2024-01,10\n2024-02,20\n"
  "The project's CSV before the run.")

(defun kiln-test--bytes (file)
  "FILE's bytes (a unibyte string), or nil when it does not exist.
Read here, not through kiln.el: the tests check what kiln wrote."
  (and (file-exists-p file)
       (with-temp-buffer
         (set-buffer-multibyte nil)
         (insert-file-contents-literally file)
         (buffer-string))))

(defun kiln-test--write (file bytes)
  "Write BYTES to FILE, readable by the sandbox's user."
  (let ((coding-system-for-write 'binary))
    (write-region bytes nil file nil 'silent))
  (set-file-modes file #o644))

(defmacro kiln-test--in-project (&rest body)
  "Run BODY with `dir' a fresh project folder, the server's workspace."
  (declare (indent 0) (debug t))
  `(let* ((dir (file-name-as-directory (make-temp-file "kiln-el-ws" t)))
          (default-directory dir))
     (set-file-modes dir #o755)
     (unwind-protect (progn ,@body)
       (dolist (b (buffer-list))
         (when (and (buffer-file-name b) (string-prefix-p dir (buffer-file-name b)))
           (with-current-buffer b (set-buffer-modified-p nil))
           (kill-buffer b)))
       (delete-directory dir t))))

(defun kiln-test--change (run path)
  "RUN's `workspaceChanges' entry of PATH."
  (cl-find path (plist-get run :workspaceChanges)
           :key (lambda (c) (plist-get c :path)) :test #'equal))

(defun kiln-test--apply ()
  "`kiln-apply-changes', then wait for its message; return the message."
  (setq kiln-test--messages nil)
  (kiln-apply-changes)
  (kiln-test--wait "the apply" (lambda () (kiln-test--said "\\`\\[kiln\\] applied ")))
  (car kiln-test--messages))

(ert-deftest kiln-run-image-workspace-change ()
  "A run's PNG, NUL bytes and CSV row are listed with size and kind, and applied by kiln."
  (kiln-test--with ()
    (kiln-test--in-project
      (kiln-test--write (expand-file-name "sales.csv" dir) kiln-test--sales)
      (kiln-test--buffer kiln-test--binary-code
        (let* ((run (plist-get (kiln-test--run-and-wait) :run))
               (png (kiln-test--change run (expand-file-name "monthly.png" dir)))
               (blob (kiln-test--change run (expand-file-name "blob.bin" dir)))
               (png-bytes (kiln-test--bytes (plist-get png :stored)))
               (blob-bytes (kiln-test--bytes (plist-get blob :stored))))
          (should (equal (plist-get run :workspace) (directory-file-name dir)))
          ;; kiln kept the binary files' new content: the run's bytes.
          (should (eq (plist-get png :binary) t))
          (should (equal (plist-get png :mimeType) "image/png"))
          (should (equal (substring png-bytes 0 8) "\211PNG\r\n\032\n"))
          (should (equal (length png-bytes) (plist-get png :size)))
          (should (equal blob-bytes (apply #'concat (make-list 100 "\0\1kiln\0"))))
          (let ((out (kiln-test--output)))
            (should (string-match-p (regexp-quote "[the run changed 3 files in the workspace; nothing is written until you apply them]\n") out))
            (should (string-match-p (regexp-quote (format "\n  created  monthly.png (%d bytes, image/png)\n"
                                                          (length png-bytes)))
                                    out))
            (should (string-match-p (regexp-quote "\n  created  blob.bin (700 bytes, application/octet-stream)\n") out))
            (should (string-match-p "\n  modified sales.csv (45 bytes)\n    \\[review\\] \\[apply\\] \\[discard\\] \n" out)))
          ;; The PNG as an image where this Emacs can show one (the lucid
          ;; run), else a button to kiln's copy; nothing written yet.
          (with-current-buffer (kiln--output-buffer)
            (goto-char (point-min))
            (if (image-type-available-p 'png)
                (let ((m (text-property-search-forward
                          'display nil (lambda (_ v) (eq (car-safe v) 'image)))))
                  (should m)
                  (should (equal (plist-get (cdr (prop-match-value m)) :type) 'png))
                  (should (equal (plist-get (cdr (prop-match-value m)) :file) (plist-get png :stored))))
              (should (search-forward (concat "kept at " (plist-get png :stored)) nil t))
              (should (button-at (1- (point))))))
          (should-not (file-exists-p (expand-file-name "monthly.png" dir)))
          (should (equal (kiln-test--apply)
                         (format "[kiln] applied 3 changes to %s" (directory-file-name dir))))
          (should (equal (kiln-test--bytes (expand-file-name "monthly.png" dir)) png-bytes))
          (should (equal (kiln-test--bytes (expand-file-name "blob.bin" dir)) blob-bytes))
          (should (equal (kiln-test--bytes (expand-file-name "sales.csv" dir))
                         (concat kiln-test--sales "2024-03,30\n")))
          (should (eq (kiln-test--face-of "[applied 3 changes to") 'kiln-success)))))))

;; issue 36: files a run wrote were listed with no size for text and
;; no way to act on one file from *kiln-output*.
(defun kiln-test--push (line label)
  "Push the button [LABEL] that follows the first LINE in the output."
  (with-current-buffer (kiln--output-buffer)
    (goto-char (point-min))
    (should (search-forward line nil t))
    (should (search-forward (concat "[" label "]") nil t))
    (let ((b (button-at (match-beginning 0))))
      (should b)
      (button-activate b))))

(ert-deftest kiln-changes-notice-review-apply-discard ()
  "Each changed file is listed with kind and size and buttons that review, apply, discard it."
  (kiln-test--with ()
    (kiln-test--in-project
      (kiln-test--write (expand-file-name "sales.csv" dir) kiln-test--sales)
      (kiln-test--buffer (concat "open('sales.csv', 'a').write('2024-03,30\\n')\n"
                                 "open('notes.txt', 'w').write('n1\\n')\n"
                                 "open('report.txt', 'w').write('total 60\\n')\n")
        (kiln-test--run-and-wait)
        (let ((out (kiln-test--output)))
          (should (string-match-p
                   (regexp-quote
                    (concat "[the run changed 3 files in the workspace; nothing is written until you apply them]\n"))
                   out))
          (dolist (l '("  modified sales.csv (45 bytes)\n    [review] [apply] [discard] \n"
                       "  created  notes.txt (3 bytes)\n    [review] [apply] [discard] \n"
                       "  created  report.txt (9 bytes)\n    [review] [apply] [discard] \n"
                       "  [apply all] [discard all] (M-x kiln-review-change, kiln-apply-changes, kiln-discard-changes)\n"))
            (should (string-match-p (regexp-quote l) out))))
        ;; Review: the run's text against the file on disk.
        (kiln-test--push "modified sales.csv" "review")
        (let ((diff (get-buffer "*kiln change sales.csv*")))
          (should diff)
          (kiln-test--wait "the diff" (lambda () (with-current-buffer diff
                                                   (string-match-p "^Diff finished" (buffer-string)))))
          (with-current-buffer diff
            (should (string-match-p "^\\+2024-03,30$" (buffer-string)))
            (should-not (string-match-p "^-2024-0[12]" (buffer-string))))
          (kill-buffer diff))
        (should (equal (kiln-test--bytes (expand-file-name "sales.csv" dir)) kiln-test--sales))
        ;; Apply one file: only it is written.
        (setq kiln-test--messages nil)
        (kiln-test--push "created  notes.txt" "apply")
        (kiln-test--wait "the apply" (lambda () (kiln-test--said "\\`\\[kiln\\] applied ")))
        (should (equal (car kiln-test--messages)
                       (format "[kiln] applied 1 change to %s" (directory-file-name dir))))
        (should (equal (kiln-test--bytes (expand-file-name "notes.txt" dir)) "n1\n"))
        (should-not (file-exists-p (expand-file-name "report.txt" dir)))
        ;; Discard another: kiln declines it.
        (setq kiln-test--messages nil)
        (kiln-test--push "created  report.txt" "discard")
        (kiln-test--wait "the discard" (lambda () (kiln-test--said "\\`\\[kiln\\] discarded ")))
        (should (string-match-p "kiln dropped report.txt\\'" (car kiln-test--messages)))
        ;; Apply all: what is left, sales.csv; report.txt stays unwritten.
        (setq kiln-test--messages nil)
        (kiln-test--push "[the run changed 3 files" "apply all")
        (kiln-test--wait "the apply" (lambda () (kiln-test--said "\\`\\[kiln\\] applied ")))
        (should (equal (car kiln-test--messages)
                       (format "[kiln] applied 1 change to %s" (directory-file-name dir))))
        (should (equal (kiln-test--bytes (expand-file-name "sales.csv" dir))
                       (concat kiln-test--sales "2024-03,30\n")))
        (should-not (file-exists-p (expand-file-name "report.txt" dir)))))))

(ert-deftest kiln-changes-stale-skipped ()
  "A file changed on the host since the run, or modified in a buffer, is skipped and named."
  (kiln-test--with ()
    (kiln-test--in-project
      (kiln-test--write (expand-file-name "sales.csv" dir) kiln-test--sales)
      (kiln-test--write (expand-file-name "monthly.png" dir) "an older plot")
      (kiln-test--write (expand-file-name "notes.txt" dir) "n0\n")
      (let ((sales (find-file-noselect (expand-file-name "sales.csv" dir))))
        (kiln-test--buffer (concat kiln-test--binary-code "open('notes.txt', 'a').write('n1\\n')\n")
          (let* ((run (plist-get (kiln-test--run-and-wait) :run))
                 (png (kiln-test--change run (expand-file-name "monthly.png" dir)))
                 (blob (kiln-test--change run (expand-file-name "blob.bin" dir))))
            (should (equal (plist-get png :kind) "modified"))
            (should (plist-get png :stored))
            ;; After the run: the person replaces the plot, and edits
            ;; notes.txt in a buffer without saving it.
            (kiln-test--write (expand-file-name "monthly.png" dir) "the host's new plot\0")
            (let ((notes (find-file-noselect (expand-file-name "notes.txt" dir))))
              (with-current-buffer notes (goto-char (point-max)) (insert "unsaved\n"))
              (should (equal (kiln-test--apply)
                             (concat (format "[kiln] applied 2 changes to %s; skipped 2: "
                                             (directory-file-name dir))
                                     "monthly.png (it was changed on the host after the run); "
                                     "notes.txt (modified in a buffer: save or revert it, then apply again)")))
              (should (equal (kiln-test--bytes (expand-file-name "monthly.png" dir))
                             "the host's new plot\0"))
              (should (equal (kiln-test--bytes (expand-file-name "notes.txt" dir)) "n0\n"))
              (with-current-buffer notes
                (should (equal (buffer-string) "n0\nunsaved\n")))
              (should (equal (kiln-test--bytes (expand-file-name "blob.bin" dir))
                             (kiln-test--bytes (plist-get blob :stored))))
              ;; The open, unmodified buffer of sales.csv shows what kiln wrote.
              (with-current-buffer sales
                (should (equal (buffer-string) (concat kiln-test--sales "2024-03,30\n"))))
              (should (eq (kiln-test--face-of
                           "[skipped monthly.png: it was changed on the host after the run]")
                          'kiln-failure))
              ;; Again, with the buffer reverted: notes.txt is applied, the
              ;; plot skipped again.
              (with-current-buffer notes (revert-buffer t t t))
              (should (equal (kiln-test--apply)
                             (format "[kiln] applied 1 change to %s; skipped 1: monthly.png (it was changed on the host after the run)"
                                     (directory-file-name dir))))
              (should (equal (kiln-test--bytes (expand-file-name "notes.txt" dir)) "n0\nn1\n"))
              (with-current-buffer notes
                (should (equal (buffer-string) "n0\nn1\n"))))))))))

;; `kiln-run' runs no session (a one-shot `snippet/run'), so there kiln
;; only forgets declined changes: the test asks kiln itself to apply them
;; afterwards.  A session run's changes come here the same way (through
;; `kiln--record-changes'); the second part starts one in a session
;; opened by the test, the way `kiln-run' starts its runs, and checks that
;; the session's next run no longer sees the declined file.
(ert-deftest kiln-changes-discard-declined ()
  "Discarding a run's changes declines them in kiln: none can be applied, a session drops them."
  (kiln-test--with ()
    (kiln-test--in-project
      (kiln-test--buffer "open('notes.txt', 'w').write('n\\n')\n"
        (let* ((run (plist-get (kiln-test--run-and-wait) :run))
               (id (plist-get run :runId))
               (notes (expand-file-name "notes.txt" dir)))
          (should (kiln-test--change run notes))
          (setq kiln-test--messages nil)
          (kiln-discard-changes)
          (kiln-test--wait "the discard" (lambda () (kiln-test--said "\\`\\[kiln\\] discarded ")))
          (should (equal (car kiln-test--messages)
                         (format "[kiln] discarded 1 change of run %s: kiln dropped notes.txt" id)))
          (should (eq (kiln-test--face-of "[discarded notes.txt: dropped by kiln]") 'kiln-success))
          (should (equal (cadr (should-error (kiln-apply-changes) :type 'user-error))
                         "[kiln] no workspace changes to apply: the rest were discarded"))
          ;; kiln itself refuses to apply it now.
          (let ((r (jsonrpc-request kiln--conn :workspace/applyChanges (list :runId id))))
            (should (equal (append (plist-get r :applied) nil) nil))
            (should (equal (plist-get (aref (plist-get r :skipped) 0) :reason)
                           "it was declined (workspace/declineChanges)")))
          (should-not (file-exists-p notes))
          ;; In a session: the next run reads the folder, no notes.txt.
          (let* ((sid (plist-get (jsonrpc-request kiln--conn :session/open (list :language "python"))
                                 :sessionId))
                 (in-session
                  (lambda (code)
                    (let ((r (kiln--start-run :snippet/run
                                              (list :language "python" :code code :sessionId sid)
                                              "session" 'snippet)))
                      (kiln-test--wait "the session run" (lambda () (not (eq kiln--run r))))
                      (plist-get kiln-last-run :run)))))
            ;; A folder's file larger than kiln sends into a session (4
            ;; MiB): its change cannot be taken out, and that is said.
            (kiln-test--write (expand-file-name "big.txt" dir) (make-string (* 5 1024 1024) ?x))
            (setq run (funcall in-session
                               "open('notes.txt', 'w').write('n\\n')\nopen('big.txt', 'a').write('y')\n"))
            (should (equal (plist-get run :sessionId) sid))
            (should (kiln-test--change run notes))
            (setq kiln-test--messages nil)
            (kiln-discard-changes)
            (kiln-test--wait "the discard" (lambda () (kiln-test--said "\\`\\[kiln\\] discarded ")))
            (let ((said (car kiln-test--messages)))
              (should (string-match-p
                       (concat "\\`" (regexp-quote (format "[kiln] discarded 1 change of run %s: kiln dropped notes.txt; the session still holds 1: big.txt ("
                                                          (plist-get run :runId)))
                               ".+)\\'")
                       said))
              (should (eq (get-text-property 0 'face said) 'error)))
            (should (eq (kiln-test--face-of "[discarded notes.txt: dropped by kiln]") 'kiln-success))
            (should (eq (kiln-test--face-of "[discarded big.txt, but the session still holds it: ") 'kiln-failure))
            (funcall in-session
                     "import os\nprint('notes', os.path.exists('notes.txt'))\nprint('big', os.path.getsize('big.txt'))\n")
            (should (string-match-p "^notes False$" (kiln-test--output)))
            (should (string-match-p (format "^big %d$" (1+ (* 5 1024 1024))) (kiln-test--output)))
            (should-not (file-exists-p notes))))))))

(ert-deftest kiln-run-display ()
  "A `run/display' bundle (a run's last value) is shown as text in the output."
  (kiln-test--with ()
    (kiln-test--buffer "x = 40\nx + 2\n"
      (let ((last (kiln-test--run-and-wait)))
        (unless (plist-get last :displays)
          (ert-skip "this server build sends no run/display (kiln issue 12)"))
        (should (string-match-p "^42$" (kiln-test--output)))))))

(ert-deftest kiln-run-display-handler ()
  "The display handler shows images and text of a MIME bundle as the protocol has it."
  ;; The server's own run/display is checked by `kiln-run-display'; here
  ;; the handler is fed bundles in the protocol's shape, as in
  ;; protocol/methods.md, so its choice of part is checked on any build.
  (kiln-test--with ()
    (let ((kiln--run (list :kind 'snippet)))
      (kiln--output-start "display")
      (kiln--dispatch nil 'run/display
                      (list :runId "r1" :data (list :text/plain "   a  b\n0  1  2"
                                                    :text/html "<table></table>")))
      (kiln--dispatch nil 'run/display
                      (list :runId "r1"
                            :data (list :text/plain "<Figure size 640x480>"
                                        :image/png (base64-encode-string "\211PNG\r\n\032\nrest"))))
      (let ((out (kiln-test--output)))
        (should (string-match-p "   a  b\n0  1  2\n" out))
        (should-not (string-match-p "<table>" out))
        (should-not (string-match-p "<Figure" out)))
      (let ((file (car (plist-get kiln--run :images))))
        (should (file-exists-p file))
        (delete-file file)))))

;; issue 36: a display's image was saved as /tmp/kiln-display_2-XXXX.bin
;; and, in a terminal, its button opened raw bytes.
(ert-deftest kiln-run-display-image-saved-and-opened ()
  "A display's PNG is saved as .png under `kiln-display-directory'; a terminal opens it outside."
  (kiln-test--with ()
    (let* ((dir (make-temp-file "kiln-displays" t))
           (record (make-temp-file "kiln-viewer"))
           (kiln-display-directory (concat dir "/kiln/displays/"))
           (kiln-external-viewer (list "sh" "-c" (format "printf %%s \"$0\" > %s" record)))
           (kiln--run (list :kind 'snippet))
           (png "\211PNG\r\n\032\nrest"))
      (unwind-protect
          (progn
            (kiln--output-start "display")
            (kiln--dispatch nil 'run/display
                            (list :runId "r1"
                                  :data (list :text/plain "<Figure size 640x480>"
                                              :image/png (base64-encode-string png))))
            (let ((file (car (plist-get kiln--run :images))))
              (should (string-prefix-p (expand-file-name kiln-display-directory) file))
              (should (string-match-p "/kiln-display_1-[^/]+\\.png\\'" file))
              (should (equal (kiln-test--bytes file) png))
              ;; The path is shown, as a button.
              (with-current-buffer (kiln--output-buffer)
                (goto-char (point-min))
                (should (search-forward file nil t))
                (let ((b (button-at (match-beginning 0))))
                  (should b)
                  (should-not (kiln--graphic-p))
                  (setq kiln-test--messages nil)
                  (button-activate b)))
              ;; Not visited as bytes: handed to the viewer, and said.
              (should-not (find-buffer-visiting file))
              (should (kiln-test--said (concat "\\`\\[kiln\\] " (regexp-quote file)
                                               ": opened with sh\\'")))
              (kiln-test--wait "the viewer" (lambda () (equal (kiln-test--bytes record) file)))))
        (delete-directory dir t)
        (delete-file record)))))

(ert-deftest kiln-run-cancel ()
  "`kiln-cancel' stops a running program; nothing is written after it."
  (kiln-test--with ()
    (kiln-test--buffer "import time\nprint('started', flush=True)\ntime.sleep(30)\nprint('never')\n"
      (let ((run (kiln-run)))
        (kiln-test--wait "the program to start"
                         (lambda () (string-match-p "started" (kiln-test--output))))
        (let ((pid (kiln-test--server-pid)))
          (kiln-cancel)
          (should-not kiln--run)
          (should (string-match-p "\\[cancelled\\]" (kiln-test--output)))
          ;; The server killed the run and still answers.
          (should (equal (plist-get (kiln-validate) :verdict) "allow"))
          (should (= pid (kiln-test--server-pid)))
          (accept-process-output nil 0.5)
          (should-not (string-match-p "never" (kiln-test--output)))
          (should (plist-get run :id)))))))

(ert-deftest kiln-run-proposal-with-repair ()
  "With `kiln-auto-repair', a failed run is repaired and the repair runs."
  (kiln-test--with ((kiln-repair-attempts 3) (kiln-auto-repair t))
    (kiln-test--model "fake-repair")
    (kiln-test--buffer ""
      (kiln-test--intent "sum the numbers")
      (kiln-accept-all)
      (should (string-match-p "totl" (buffer-string)))
      (let ((last (kiln-test--run-and-wait)))
        (should (eq (plist-get (plist-get last :result) :ok) t))
        (let ((out (kiln-test--output)))
          (should (string-match-p "kiln run: proposal p[0-9]+" out))
          (should (string-match-p "NameError" out))
          (should (string-match-p "-- attempt 2 repaired (verdict allow) --" out))
          (should (string-match-p "^3$" out))
          (should (string-match-p "\\[exit 0, [0-9]+ ms, 2 attempts (1 repairs)\\]" out)))))))

(defconst kiln-test--wrong "total = 0\nfor n in range(3):\n    total += n\nprint(totl)\n"
  "The fake model's first proposal for \"fake-repair\": it fails.")

(defconst kiln-test--right "total = 0\nfor n in range(3):\n    total += n\nprint(total)\n"
  "Its repair: it prints 3.")

(ert-deftest kiln-run-review-follows-repair ()
  "After an automatic repair the review holds, and accepting writes, the code that ran."
  (kiln-test--with ((kiln-repair-attempts 3) (kiln-auto-repair t))
    (kiln-test--model "fake-repair")
    (kiln-test--buffer "# the average\n"
      (let* ((first (kiln-test--intent "print the average of 3, 4 and 5"))
             (first-id (plist-get (plist-get first :proposal) :proposalId)))
        (should (equal (mapcar (lambda (h) (plist-get h :new)) (plist-get first :hunks))
                       (list kiln-test--wrong)))
        ;; Run it while its review is open: it fails, is repaired, runs.
        (should (eq (plist-get (plist-get (kiln-test--run-and-wait) :result) :ok) t))
        (should kiln--review)
        (let ((new-id (plist-get (plist-get kiln--review :proposal) :proposalId)))
          (should-not (equal new-id first-id))
          (should (equal (mapcar (lambda (h) (plist-get h :new)) (plist-get kiln--review :hunks))
                         (list kiln-test--right)))
          ;; Drawn as an overlay holding the repaired line.
          (should (string-match-p "print(total)"
                                  (overlay-get (plist-get (car (plist-get kiln--review :hunks))
                                                          :overlay)
                                               'before-string)))
          (should (equal (buffer-string) "# the average\n"))
          (should (kiln-test--said (format "review now shows %s" new-id)))
          (kiln-accept-all)
          (should (equal (buffer-string) (concat "# the average\n" kiln-test--right))))))))

(ert-deftest kiln-run-repair-after-accept ()
  "A repair waits for approval: it reviews the changed line, and runs only on `kiln-run'."
  (kiln-test--with ((kiln-repair-attempts 3))
    (kiln-test--model "fake-repair")
    (kiln-test--buffer "# sum\n"
      (let ((first-id (plist-get (plist-get (kiln-test--intent "sum 0..2") :proposal)
                                 :proposalId)))
        (kiln-accept-all)
        (should (equal (buffer-string) (concat "# sum\n" kiln-test--wrong)))
        (let ((result (plist-get (kiln-test--run-and-wait) :result)))
          ;; The repair is a new proposal: it did not run (`kiln-auto-repair' is nil).
          (should (eq (plist-get result :ok) :json-false))
          (should (equal (plist-get result :stopped) "needs_approval"))
          (should (= (length (plist-get result :attempts)) 1))
          (should-not (string-match-p "^3$" (kiln-test--output)))
          (should (string-match-p "the repaired code p[0-9]+ did not run: it needs your approval"
                                  (kiln-test--output))))
        (should kiln--review)
        (let ((new-id (plist-get (plist-get kiln--review :proposal) :proposalId)))
          (should-not (equal new-id first-id))
          (should (equal (mapcar (lambda (h) (plist-get h :new)) (plist-get kiln--review :hunks))
                         '("print(total)\n")))
          (kiln-accept-all)
          (should (equal (buffer-string) (concat "# sum\n" kiln-test--right)))
          ;; The buffer is the repaired proposal now: `kiln-run' approves it.
          (let ((last (kiln-test--run-and-wait)))
            (should (eq (plist-get (plist-get last :result) :ok) t))
            (should (string-match-p (format "\\`kiln run: proposal %s " (regexp-quote new-id))
                                    (kiln-test--output)))
            (should (string-match-p "^3$" (kiln-test--output)))))))))

(ert-deftest kiln-run-nul-does-not-lose-output ()
  "A NUL the program writes does not lose the output around it."
  (kiln-test--with ()
    (kiln-test--buffer "import sys\nsys.stdout.write('a\\0b\\n')\nsys.stdout.flush()\nprint('after')\n"
      (kiln-test--run-and-wait)
      (let ((out (kiln-test--output)))
        ;; U+FFFD where this Emacs's parser refuses \u0000 (28), the NUL
        ;; itself where it takes it (30).
        (should (string-match-p (if (kiln--json-refuses-nul-p) "a\ufffdb\n" "a\0b\n") out))
        (should (string-match-p "^after$" out))))))

(provide 'kiln-test)
;;; kiln-test.el ends here
